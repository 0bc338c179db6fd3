// Configured events turned into what a counting collector exports: the family name (one place
// makes and checks them all), the HELP text and the unit. The papi collector resolves its specs
// here; the perf-backend collectors (process targets, containers) name theirs with the same
// functions through perf/counted_events.
#pragma once

#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/events/vocabulary.h"
#include "collectors/events/specs.h"

namespace hwperf::events {

// One configured event as a collector exports it, resolved and validated at startup.
struct ExportedEvent {
  std::string event;        // as configured: "PAPI_TOT_INS", "perf::PAGE-FAULTS:u"
  std::string counted_as;   // what is opened: `event`, or its generic equivalent (perf::...)
  std::string family;       // the exported family name (name_families sets it)
  std::string where;        // where it was configured ("file:line:column"), for messages
  std::string metric;       // base name without level prefix or "_total": "instructions"
  std::string description;  // first part of HELP: the user's `help`, or PAPI's description
  Unit unit = Unit::count;
  bool is_default = false;  // from the built-in default set (best effort) rather than the user
};

// The events a collector counts when its configuration lists none, as if the user had written
// `events: [names...]` without `metric:` or `help:`.
std::vector<EventSpec> events_from_names(std::initializer_list<const char*> names);

// The level word of a per-CPU family for a granularity (hwperf_<level>_<metric>_total). A table
// of its own: renaming a configuration value must not rename metrics.
std::string family_level(Granularity granularity);

// hwperf_cpu_<metric>_total, hwperf_core_..., hwperf_package_..., hwperf_machine_...
// Throws std::invalid_argument when the result is not a valid metric name.
std::string counter_family_name(Granularity granularity, const ExportedEvent& event);

// The metric base an event is exported under: `metric:` when given, else default_metric_base().
// Returns "" and appends a problem (naming `where`) when `metric:` ends in "_total"; a
// nanosecond event's name always ends in "_seconds", since the value is exported in seconds.
std::string metric_base_of(const EventSpec& config, const std::string& where,
                           std::vector<std::string>& problems);

// The first part of an event's HELP: the user's `help:`, the vocabulary's own description, else
// `fallback(event)` (PAPI's description, or a plain "Event NAME").
std::string description_of(const EventSpec& config,
                           const std::function<std::string(const std::string&)>& fallback);

// Sets every spec's family name (hwperf_<level>_<metric>_total), the one place family names
// are made and checked: returns a problem (naming spec.where) for each name that is invalid or
// taken by an earlier spec.
std::vector<std::string> name_families(std::vector<ExportedEvent>& specs, std::string_view level);
inline std::vector<std::string> name_families(std::vector<ExportedEvent>& specs,
                                              Granularity granularity) {
  return name_families(specs, family_level(granularity));
}

// Resolves metric names, descriptions and units of the papi collector's events.
// `papi_description` returns PAPI's description of an event ("" when it has none). Throws
// ConfigError listing every problem at once: metric names that are invalid, end in "_total", or
// clash; `cpu=` qualifiers (the collector binds CPUs itself, from `cpus`) and sampling ones.
std::vector<ExportedEvent> resolve_event_specs(
    const std::vector<EventSpec>& events, bool are_defaults, Granularity granularity,
    const std::function<std::string(const std::string&)>& papi_description);

}  // namespace hwperf::events
