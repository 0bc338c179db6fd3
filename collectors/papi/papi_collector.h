// The PAPI collector: system-wide counts of configured PAPI events on every selected hardware
// thread, exported per CPU or summed per core, package or machine.
//
// This header does not include papi.h (only collectors/papi/*.cpp do). The collector logic
// (naming, aggregation, labels, monotonic guard, status metrics) sits behind a CounterSource, so
// tests drive it with a fake source; make_papi_collector() plugs in the real PAPI source.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "collectors/collector.h"
#include "collectors/papi/counter_source.h"
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

// The collector around any source (tests use a fake one). Uses config.granularity and
// config.domain only; `events` are those the source was opened with, in the same order.
// Throws ConfigError if a metric name is invalid or clashes.
std::unique_ptr<Collector> make_papi_collector_from_source(
    const PapiCollectorConfig& config, std::vector<papi::EventSpec> events,
    const Topology& topology, std::unique_ptr<papi::CounterSource> source);

// The collector when PAPI cannot count on this machine at all and only the default events were
// asked for: hwperf_papi_available{reason} 0, nothing else. `reason` is
// papi::UnavailableError::reason().
std::unique_ptr<Collector> make_papi_unavailable_collector(const std::string& reason);

// For --check-config: one line per event saying whether PAPI can count it here, on which CPUs,
// under which metric name (and, for a preset counted through the kernel's generic event, through
// which), and why not. With the default events and PAPI unavailable, one line saying why. Opens the counters for real (then closes them), so the
// answer is the one the exporter would get. Throws ConfigError like make_papi_collector().
std::vector<std::string> papi_check_report(const PapiCollectorConfig& config,
                                           const Topology& topology,
                                           const PathsConfig& paths = PathsConfig{});

// "7.0.0.0": the version of the libpapi this process runs with (PAPI_LIB_VERSION, for
// hwperf_build_info and --version); the one it was built against if PAPI cannot initialise.
std::string papi_library_version();

}  // namespace hwperf
