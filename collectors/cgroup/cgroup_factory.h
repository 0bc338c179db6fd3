// Builds the cgroup collector from the configuration: the perf_event hierarchy found (read only,
// nothing mounted), events resolved like the process targets', and one cgroup event opened at
// startup so that a missing privilege is an error before serving, with the remedy.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "collectors/cgroup/cgroup_collector.h"
#include "common/open_files.h"
#include "collectors/events/presets.h"
#include "config/config.h"
#include "topology/topology.h"

namespace hwperf::cgroup {

std::unique_ptr<CgroupCollector> make_cgroup_collector(const Config& config,
                                                       const Topology& topology,
                                                       const events::PresetCatalog& presets);

// Counted when the configuration lists no events: best effort, what this machine cannot count is
// dropped with one warning. CPU time first: the energy rules split power by it.
std::vector<PapiEventConfig> default_cgroup_events();

// Descriptors at the cap: max_cgroups x events x CPUs.
FileNeed cgroup_file_need(const Config& config, const Topology& topology);

// The --check-config lines: the hierarchy and what discovery finds now.
std::vector<std::string> cgroup_check_report(const Config& config, const Topology& topology);

}  // namespace hwperf::cgroup
