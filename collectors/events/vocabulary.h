// The event vocabulary every counting collector shares (papi per CPU, process targets,
// containers): how an event name is read, the metric name and unit it gets, what it means, which
// kernel generic event has exactly a preset's meaning, and which qualifiers the exporter refuses.
// No PAPI and no perf calls: everything here is a pure function of the name.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/events/specs.h"

namespace hwperf::events {

// perf's CPU-CLOCK and TASK-CLOCK count nanoseconds; they are exported in seconds (the
// Prometheus base unit), converted only when the sample is built.
enum class Unit { count, nanoseconds };

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
// The event to open for `event`: a preset that PAPI knows but does not define for this CPU is
// counted through generic_equivalent() when PAPI knows that one; anything else as itself.
std::string choose_counted_as(const std::string& event,
                              const std::function<EventStatus(const std::string&)>& status_of);

bool has_domain_qualifier(std::string_view event);  // u, k, u=..., k=...
bool has_cpu_qualifier(std::string_view event);     // cpu=...
// The first qualifier that makes libpfm4 sample rather than count (period=, freq=, hw_smpl), as
// written; nothing when there is none.
std::optional<std::string> sampling_qualifier(std::string_view event);
// The privilege levels an event's own u/k qualifiers select; they win over the collector's
// domain. libpfm4 counts exactly the levels whose qualifier is true (bare, or =1/y/t), so
// perf::CYCLES:u counts user mode only and :u=0 alone counts neither. nullopt when the event has
// no u/k qualifier.
struct QualifiedDomain {
  bool user = false;
  bool kernel = false;
};
std::optional<QualifiedDomain> qualified_domain(std::string_view event);
// The qualifier-binding name of a native event: "perf::PAGE-FAULTS" on CPU 3 counting user and
// kernel -> "perf::PAGE-FAULTS:cpu=3:u=1:k=1". A domain the user already gave is kept.
std::string cpu_qualified_name(std::string_view native_event, unsigned cpu, CountingDomain domain);

}  // namespace hwperf::events
