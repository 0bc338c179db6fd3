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
#include "config/config.h"

namespace hwperf {

class Topology;

namespace papi {

// perf's CPU-CLOCK and TASK-CLOCK count nanoseconds; they are exported in seconds (the
// Prometheus base unit), converted only when the sample is built.
enum class Unit { count, nanoseconds };

// One configured event as the collector exports it, resolved and validated at startup.
struct EventSpec {
  std::string event;        // as configured: "PAPI_TOT_INS", "perf::PAGE-FAULTS:u"
  std::string counted_as;   // what PAPI opens: `event`, or its generic equivalent (perf::...)
  std::string metric;       // base name without level prefix or "_total": "instructions"
  std::string description;  // first part of HELP: the user's `help`, or PAPI's description
  Unit unit = Unit::count;
  bool is_default = false;  // from the built-in default set (best effort) rather than the user
};

// One (event, CPU) pair that the source counts. read() fills values in layout order.
struct CounterId {
  std::size_t event = 0;  // index into the EventSpec list the source was opened with
  unsigned cpu = 0;
};

// One (event, CPU) pair that exists but could not be opened; decided once at startup.
struct DroppedCounter {
  std::size_t event = 0;
  unsigned cpu = 0;
  std::string reason;  // short, stable text (PAPI_strerror): the `reason` label
  std::string remedy;  // what the user can do about it, for the log line
};

struct EventSetInfo {
  unsigned cpu = 0;
  unsigned index = 0;   // 0, 1, ... per CPU, in the order the sets were built
  std::string binding;  // "cpu_attach" or "qualifier" (see papi_source.cpp)
  bool multiplexed = false;
  std::vector<std::size_t> counters;  // indices into SourceLayout::counters
};

struct SourceLayout {
  std::vector<CounterId> counters;
  std::vector<DroppedCounter> dropped;
  std::vector<EventSetInfo> event_sets;
  std::vector<std::string> notes;  // startup decisions worth one log line each
};

// Counts that are already running. Fixed at construction: a source never adds, resets, stops
// or restarts counters afterwards.
class CounterSource {
 public:
  virtual ~CounterSource() = default;
  CounterSource() = default;
  CounterSource(const CounterSource&) = delete;
  CounterSource& operator=(const CounterSource&) = delete;

  virtual const SourceLayout& layout() const = 0;
  // Fills values[i] (already sized to layout().counters.size()) with the current raw count of
  // layout().counters[i]. The collector serialises calls, so a source needs no lock of its own.
  // Throws std::runtime_error when the counters cannot be read.
  virtual void read(std::vector<std::uint64_t>& values) = 0;
};

}  // namespace papi

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
