// Builds the process collector from the configuration: events encoded through libpfm4 and probed
// on the exporter's own thread, pidfiles checked, CPUs chosen; every problem a ConfigError (exit
// 2) naming file:line:column and what to do.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "collectors/events/presets.h"
#include "collectors/process/process_collector.h"
#include "config/config.h"
#include "topology/topology.h"

namespace hwperf::process {

std::unique_ptr<ProcessCollector> make_process_collector(const Config& config,
                                                         const Topology& topology,
                                                         const events::PresetCatalog& presets);

}  // namespace hwperf::process
