// The events a perf-backend collector counts (process targets, containers), resolved once at
// startup from the shared vocabulary (collectors/events): presets through PAPI's definition (the
// preset catalog: one native event, or a sum or difference of several, counted together as one
// kernel group) or their exact kernel generic event, everything encoded by
// libpfm4 and opened once on this thread so that what cannot be counted here is found before
// serving, with the family names made by events::name_families. Event groups (events/groups.h)
// are resolved the same way, member by member, then opened together once: a group is counted
// whole or not at all.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <prometheus/metric_family.h>

#include "collectors/events/emission.h"
#include "collectors/events/groups.h"
#include "collectors/events/presets.h"
#include "collectors/metrics.h"
#include "collectors/prepared_family.h"
#include "collectors/events/vocabulary.h"
#include "collectors/perf/perf_event.h"
#include "collectors/events/specs.h"

namespace hwperf::perf {

// One kernel counter of an event, and the integer its count is multiplied by in the event's value.
struct CountedTerm {
  EventEncoding encoding;
  std::int64_t coefficient = 1;
};

struct CountedEvent {
  std::string event;   // as configured
  std::string where;   // file:line:column, or "" for a default event
  std::string family;  // hwperf_<level>_<metric>_total
  std::string metric;  // the base events::name_families made `family` from: other levels' too
  std::string help;
  events::Unit unit = events::Unit::count;
  EventEncoding encoding;  // what is opened: the event, or a derived preset's first term
  // A preset PAPI defines here as a sum or difference of native events (PAPI_L1_TCM on Ice
  // Lake-SP: L1D:REPLACEMENT + L2_RQSTS:ALL_CODE_RD): every term, `encoding` being the first's.
  // They are opened side by side in the event's kernel group, so that each covers the same time,
  // and the event's value is their sum (CountedValue::terms). Empty for an event of one counter.
  std::vector<CountedTerm> derived;
  // For a preset, what PAPI defines it as here ("L1D:REPLACEMENT + L2_RQSTS:ALL_CODE_RD"), in
  // --check-config and HELP; "" for any other event.
  std::string counted_as;
};
// Every counter of an event: its derived terms, or its one encoding.
std::vector<CountedTerm> counters_of(const CountedEvent& event);

// One group as a perf-backend collector counts it: its chosen events, the first leading.
struct CountedGroup {
  std::string name;
  std::string where;                  // "file:line:column: collectors.X.groups", or the key
  std::vector<CountedEvent> members;  // family hwperf_<level>_<member metric>_total each
};

// Opens a group's events as the collector will (its own task, a cgroup on a CPU): what the
// startup probe of a group tries.
using GroupOpener = std::function<OrErrno<CounterGroup>(const std::vector<EventEncoding>&)>;

struct EventRequest {
  std::vector<EventSpec> configured;
  bool defaults = false;  // best effort: what cannot be counted is skipped with a warning
  std::vector<events::GroupDefinition> groups;
  bool default_groups = false;  // best effort too: a group that cannot be counted is skipped
  GroupOpener open_group;       // null: on the exporter's own thread
  const events::PresetCatalog* presets = nullptr;  // what PAPI defines presets as; required
  CountingDomain domain = CountingDomain::all;
  std::string procfs;
  std::string level;        // "process", "container": the family prefix
  std::string collector;    // "process", "cgroup": the collector's name, in the log
  std::string config_path;  // "collectors.process.events", named in errors
  std::string counted_for;  // "Counted for each process target", in HELP
  // How the counts add up, in HELP after counted_for.
  std::string scope = "every thread and what it starts";
};

struct ResolvedEvents {
  std::vector<CountedEvent> events;
  std::vector<CountedGroup> groups;
  // --check-config, per group asked for: "group ipc: countable (perf::INSTRUCTIONS, ...)" or
  // "group ipc: NOT countable: ins (perf::INSTRUCTIONS: why)".
  std::vector<std::string> group_lines;
  CountingDomain domain = CountingDomain::all;  // narrower than asked when the kernel allows less
  std::string domain_note;                      // why it is narrower, "" when it is not
};

// Throws ConfigError naming file:line:column for events and groups the user listed that cannot
// be counted (a group whose events can never be on the counters together included),
// std::runtime_error when nothing is left to count of the defaults.
ResolvedEvents resolve_counted_events(const EventRequest& request);

// The --check-config lines of resolved events: "event perf::TASK-CLOCK -> hwperf_..._total".
std::vector<std::string> event_lines(const std::vector<CountedEvent>& events);

// What a collector opens and exports, decided once: every ungrouped event and every group is
// one kernel group (an ungrouped event is a group of one, or of its terms, so one code path
// opens and reads both). Their kernel counters are numbered in that order (counts), and so are
// the values exported, each with the family it is exported in: a value is one count, or the sum
// of a derived preset's terms. The same event grouped and ungrouped, or in two groups, is counted
// by separate counters into one family (one HELP), its series told apart by the `group` label.
struct CountingUnit {
  std::string group;  // "" for an ungrouped event
  std::vector<EventEncoding> events;
  std::size_t first = 0;  // the number of its first count
  std::size_t value = 0;  // the number of its first value
};
struct CountedValue {
  std::size_t family = 0;  // index into CountingPlan::families
  events::Unit unit = events::Unit::count;
  std::string group;  // "" for an ungrouped event
  std::string event;
  // The counts it sums, each times its coefficient: its own, or a derived preset's terms.
  std::vector<std::pair<std::size_t, std::int64_t>> terms;
};
struct CountedFamily {
  std::string name;
  std::string help;
  std::string where;  // where it was first configured
};
struct CountingPlan {
  std::vector<CountingUnit> units;
  std::vector<CountedValue> values;     // numbered as above
  std::vector<CountedFamily> families;  // each name once, in the order first counted
  std::size_t counts = 0;               // kernel counters of all units together
  std::size_t events() const { return values.size(); }
};
CountingPlan counting_plan(const std::vector<CountedEvent>& events,
                           const std::vector<CountedGroup>& groups);
// The totals of the values, [value * slots + slot], from those of the counts, [count * slots +
// slot]: each value the sum of its terms. A difference (PAPI subtracts events that count part of
// the first, scaled alike in one group) cannot go below 0; were it to, it is 0.
std::vector<std::uint64_t> value_totals(const CountingPlan& plan,
                                        const std::vector<std::uint64_t>& counts,
                                        std::size_t slots);
// One empty counter family per name of the plan.
std::vector<prometheus::MetricFamily> counter_families(const CountingPlan& plan);
// Those families from text prepared with their series member by member (a cgroup, a target),
// value by value, as events::add_series adds them: each family written whole, its series valued
// from each member's values ([value * slots + slot], values_of(member)) in that order.
void write_counter_families(
    const CountingPlan& plan, const std::vector<PreparedFamily>& families,
    const std::vector<events::CounterSeries>& series, std::size_t slots, std::size_t members,
    const std::function<const std::vector<std::uint64_t>&(std::size_t)>& values_of,
    std::string& out, ExpositionFormat format);
// The `group` label of a count: none for an ungrouped event.
void add_group_label(Labels& labels, const CountedValue& value);

}  // namespace hwperf::perf
