// The real PAPI collector and its --check-config report: PAPI opened on this machine, behind the
// collector of papi_collector.h.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "collectors/collector.h"
#include "common/open_files.h"
#include "config/config.h"

namespace hwperf {

class Topology;

// The real collector: validates config.events / config.cpus (ConfigError, exit 2, for unknown
// events, bad CPU lists, CPUs not in the topology, invalid or clashing metric names), initialises
// PAPI for threads, opens and starts every counter, and logs once each (event, CPUs) it had to
// drop and why. Throws std::runtime_error with the remedy when PAPI cannot initialise or when
// none of the events the user named can be counted anywhere. Remedies name files under `paths`
// (--path.procfs for kernel.perf_event_paranoid, --path.sysfs).
std::unique_ptr<Collector> make_papi_collector(const PapiCollectorConfig& config,
                                               const Topology& topology,
                                               const PathsConfig& paths = PathsConfig{});

// For --check-config: one line per event saying whether PAPI can count it here, on which CPUs,
// under which metric name (and, for a preset counted through the kernel's generic event, through
// which), and why not. With the default events and PAPI unavailable, one line saying why. Opens
// the counters for real (then closes them), so the answer is the one the exporter would get. Throws
// ConfigError like make_papi_collector().
std::vector<std::string> papi_check_report(const PapiCollectorConfig& config,
                                           const Topology& topology,
                                           const PathsConfig& paths = PathsConfig{});

// The descriptors the collector will hold open: one per CPU and native event counted, so a
// derived preset counts once per term PAPI defines it by here. Where PAPI cannot start, one per
// event (the collector then opens nothing anyway).
FileNeed papi_file_need(const PapiCollectorConfig& config, const Topology& topology,
                        const PathsConfig& paths = PathsConfig{});

}  // namespace hwperf
