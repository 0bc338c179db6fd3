// The PAPI collector: system-wide counts of configured PAPI events on every selected hardware
// thread, exported per CPU or summed per core, package or machine.
//
// This header does not include papi.h (only collectors/papi/*.cpp do). The collector logic
// (naming, aggregation, labels, monotonic guard, status metrics) sits behind a CounterSource, so
// tests drive it with a fake source; make_papi_collector() (papi_factory.h) plugs in the real
// PAPI source.
#pragma once

#include <cstddef>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collectors/collector.h"
#include "collectors/events/event_specs.h"
#include "collectors/papi/counter_source.h"
#include "collectors/papi/papi_config.h"

namespace hwperf {

class Topology;

namespace papi {
// What keeps counters counting while the exporter runs: a background thread (never a scrape)
// that every `period` rebuilds the event sets of a CPU that came back online and retries the
// sets that failed to read, with back-off doubling from one period up to `max_backoff`.
struct Maintenance {
  // The CPUs online now (<sysfs>/devices/system/cpu/online), or nothing when that cannot be
  // read. Empty function: CPU hotplug is not watched (and hwperf_cpu_online not exported).
  std::function<std::optional<std::vector<unsigned>>()> online_cpus;
  std::chrono::milliseconds period{1000};
  std::chrono::milliseconds max_backoff{60000};
  std::function<std::chrono::steady_clock::time_point()> now = &std::chrono::steady_clock::now;
};

// An event group as the collector exports it: its members (named and described by the factory,
// family names made by the collector) in the `group` label `name`. In the source's layout the
// groups' events follow the ungrouped ones, each group's members then its enabled and running
// times (papi_group_source.h): group g's first event is the number of ungrouped events plus,
// for each group before it, its members and 2.
struct ExportedGroup {
  std::string name;
  std::vector<events::ExportedEvent> members;
};
// A default group this machine cannot count: exported as
// hwperf_papi_group_dropped{group, member, event, reason} 1 (papi_groups.h: PlannedGroup).
struct DroppedGroup {
  std::string name;
  std::string member;
  std::string event;
  std::string reason;
};
}  // namespace papi

// The collector around any source (tests use a fake one). Uses config.granularity and
// config.domain only; `events` are those the source was opened with, in the same order, and
// `groups` those it counts as kernel groups. Per group it exports
// hwperf_<level>_group_enabled_seconds_total and _running_seconds_total; `dropped` are the
// default groups left out. Throws ConfigError if a metric name is invalid or clashes (within the
// ungrouped events, or within one group).
std::unique_ptr<Collector> make_papi_collector_from_source(
    const PapiCollectorConfig& config, std::vector<events::ExportedEvent> events,
    const Topology& topology, std::unique_ptr<papi::CounterSource> source,
    papi::Maintenance maintenance = {}, std::vector<papi::ExportedGroup> groups = {},
    std::vector<papi::DroppedGroup> dropped = {});

// The collector when PAPI cannot count on this machine at all and only the default events were
// asked for: hwperf_papi_available{reason} 0, nothing else. `reason` is
// papi::UnavailableError::reason().
std::unique_ptr<Collector> make_papi_unavailable_collector(const std::string& reason);

}  // namespace hwperf
