// Pure helpers of the PAPI collector: event-name parsing, metric naming, units, the default
// event set, CPU selection and per-CPU qualifiers. No PAPI calls here, so all of it is unit
// tested without a PMU.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/papi/counter_source.h"
#include "config/config.h"

namespace hwperf {

class Topology;

namespace papi {

// "perf::PAGE-FAULTS:u=1" -> pmu "perf", base "PAGE-FAULTS", qualifiers {"u=1"}.
// "PAPI_TOT_INS" -> pmu "", base "PAPI_TOT_INS", no qualifiers.
struct EventName {
  std::string pmu;
  std::string base;
  std::vector<std::string> qualifiers;
};
EventName parse_event_name(std::string_view event);
bool is_preset(std::string_view event);  // "PAPI_..." without a PMU prefix

// The metric base name derived from an event: readable names for common presets
// (PAPI_TOT_INS -> instructions), otherwise the snake_case of the name without its PMU prefix
// (perf::PAGE-FAULTS -> page_faults). Nanosecond events get "_seconds"; a name
// that would repeat the family's level is shortened (perf::CPU-CLOCK -> clock_seconds).
std::string default_metric_base(std::string_view event);
Unit event_unit(std::string_view event);
// A readable description for events whose PAPI description is only a kernel constant
// (perf::PAGE-FAULTS -> "Page faults"); "" when there is none.
std::string builtin_description(std::string_view event);

// The kernel generic event (perf::INSTRUCTIONS) with exactly the meaning of a PAPI preset
// (PAPI_TOT_INS), for presets PAPI has no definition of on this CPU; nullopt where no generic
// event means the same (every cache preset).
std::optional<std::string> generic_equivalent(std::string_view preset);

// What PAPI says of an event name on this machine (PAPI_event_name_to_code and
// PAPI_query_named_event): a preset can be known, yet have no definition for this CPU.
struct EventStatus {
  bool known = false;
  bool defined = false;
};
// The event PAPI should open for `event`: a preset that PAPI knows but does not define for this
// CPU is counted through generic_equivalent() when PAPI knows that one; anything else as itself.
std::string choose_counted_as(const std::string& event,
                              const std::function<EventStatus(const std::string&)>& status_of);

bool has_domain_qualifier(std::string_view event);  // u, k, u=..., k=...
bool has_cpu_qualifier(std::string_view event);     // cpu=...
// The first qualifier that makes libpfm4 sample rather than count (period=, freq=, hw_smpl), as
// written; nothing when there is none.
std::optional<std::string> sampling_qualifier(std::string_view event);
// The privilege levels an event's own u/k qualifiers select; they win over
// collectors.papi.domain. libpfm4 counts exactly the levels whose qualifier is true (bare, or
// =1/y/t), so perf::CYCLES:u counts user mode only and :u=0 alone counts neither. nullopt when
// the event has no u/k qualifier.
struct QualifiedDomain {
  bool user = false;
  bool kernel = false;
};
std::optional<QualifiedDomain> qualified_domain(std::string_view event);
// The qualifier-binding name of a native event: "perf::PAGE-FAULTS" on CPU 3 counting user and
// kernel -> "perf::PAGE-FAULTS:cpu=3:u=1:k=1". A domain the user already gave is kept.
std::string cpu_qualified_name(std::string_view native_event, unsigned cpu, CountingDomain domain);

// Descriptors one CPU's events take: one per native event each is counted through, so a derived
// preset (PAPI_FP_OPS as three native events) counts each of its terms. `native_terms` says how
// many an event has here (at least 1 is assumed).
std::size_t descriptors_per_cpu(const std::vector<std::string>& events,
                                const std::function<unsigned(const std::string&)>& native_terms);

// Used when the config lists no events. Best effort: what this machine cannot count is skipped.
std::vector<PapiEventConfig> default_events();

// Resolves metric names, descriptions and units. `papi_description` returns PAPI's description
// of an event ("" when it has none). Throws ConfigError listing every problem at once: metric
// names that are invalid, end in "_total", or clash; `cpu=` qualifiers (the collector binds CPUs
// itself, from `cpus`).
std::vector<EventSpec> resolve_event_specs(
    const std::vector<PapiEventConfig>& events, bool are_defaults, Granularity granularity,
    const std::function<std::string(const std::string&)>& papi_description);

// hwperf_cpu_<metric>_total, hwperf_core_..., hwperf_package_..., hwperf_machine_...
// Throws std::invalid_argument when the result is not a valid metric name.
std::string counter_family_name(Granularity granularity, const EventSpec& event);

// Sets every spec's family name, the one place family names are made and checked: returns a
// problem (naming spec.where) for each name that is invalid or taken by an earlier spec.
std::vector<std::string> name_families(std::vector<EventSpec>& specs, Granularity granularity);

// config.cpus against the topology: "all" is every CPU in it. Throws ConfigError naming
// where the list was written for CPUs the topology does not have (offline or absent).
std::vector<unsigned> select_cpus(const PapiCollectorConfig& config, const Topology& topology);

}  // namespace papi
}  // namespace hwperf
