// Builds the process collector from the configuration: events encoded through libpfm4 and probed
// on the exporter's own thread, pidfiles checked, CPUs chosen; every problem a ConfigError (exit
// 2) naming file:line:column and what to do.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "collectors/process/process_collector.h"
#include "common/open_files.h"
#include "collectors/events/presets.h"
#include "config/config.h"
#include "topology/topology.h"

namespace hwperf::process {

std::unique_ptr<ProcessCollector> make_process_collector(const Config& config,
                                                         const Topology& topology,
                                                         const events::PresetCatalog& presets);

// Events the process targets count when the configuration lists none: best effort, what this
// machine cannot count is dropped with one warning.
std::vector<PapiEventConfig> default_process_events();

// Descriptors the targets need now: threads of the processes they select x events x CPU slots.
FileNeed process_file_need(const Config& config, const Topology& topology);

// The --check-config lines: each target, its selector and what it selects now.
std::vector<std::string> process_check_report(const Config& config, const Topology& topology);

}  // namespace hwperf::process
