// Builds the cgroup collector from the configuration: the perf_event hierarchy found (read only,
// nothing mounted), events resolved like the process targets', and one cgroup event opened at
// startup so that a missing privilege is an error before serving, with the remedy.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "collectors/cgroup/cgroup_collector.h"
#include "collectors/events/presets.h"
#include "config/config.h"
#include "topology/topology.h"

namespace hwperf::cgroup {

std::unique_ptr<CgroupCollector> make_cgroup_collector(const Config& config,
                                                       const Topology& topology,
                                                       const events::PresetCatalog& presets);

}  // namespace hwperf::cgroup
