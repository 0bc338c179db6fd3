// PAPI presets in the perf-backend collectors (issue 35, item 11): PAPI's definition of a preset
// as a sum of native events times integers (papi_events.csv's NOT_DERIVED, DERIVED_ADD,
// DERIVED_SUB and postfix formulas), refused only where it is no such sum; resolved through a
// made-up catalog onto software events this machine opens; and the counting plan's values, the
// sums of their terms' counts.
#include "tests/catch.hpp"

#include <string>
#include <vector>

#include "collectors/events/event_specs.h"
#include "collectors/events/groups.h"
#include "collectors/events/presets.h"
#include "collectors/perf/counted_events.h"
#include "config/errors.h"
#include "tests/support/preset_fakes.h"

using namespace hwperf;
using events::Derivation;
using events::linear_derivation;
using events::PresetTerm;

namespace {

std::string text_of(const Derivation& derivation) {
  return derivation.refused.empty() ? events::derivation_text(derivation.terms)
                                    : "refused: " + derivation.refused;
}

}  // namespace

TEST_CASE("PAPI's definitions that are sums of native events are read as sums", "[papi][events]") {
  struct Row {
    const char* derived;
    const char* postfix;
    std::vector<std::string> natives;
    const char* expected;
  };
  // The rows of papi_events.csv (PAPI 7.0, "CPU,icx" unless said), as PAPI_get_event_info gives
  // them.
  const auto row = GENERATE(values<Row>({
      {"NOT_DERIVED", "", {"L1D:REPLACEMENT"}, "L1D:REPLACEMENT"},
      {"DERIVED_ADD",
       "",
       {"L1D:REPLACEMENT", "L2_RQSTS:ALL_CODE_RD"},
       "L1D:REPLACEMENT + L2_RQSTS:ALL_CODE_RD"},
      {"DERIVED_SUB",
       "",
       {"LLC_REFERENCES", "L2_RQSTS:CODE_RD_MISS"},
       "LLC_REFERENCES - L2_RQSTS:CODE_RD_MISS"},
      // "CPU,Intel Atom": PAPI_L1_DCM is L2_RQSTS:SELF:MESI - ICACHE:MISSES.
      {"DERIVED_SUB", "", {"A", "B", "C"}, "A - B - C"},
      {"DERIVED_POSTFIX",
       "N0|N1|2|*|+|N2|4|*|+|N3|8|*|+|",
       {"FP_ARITH:SCALAR_DOUBLE", "FP_ARITH:128B_PACKED_DOUBLE", "FP_ARITH:256B_PACKED_DOUBLE",
        "FP_ARITH:512B_PACKED_DOUBLE"},
       "FP_ARITH:SCALAR_DOUBLE + 2 x FP_ARITH:128B_PACKED_DOUBLE + 4 x "
       "FP_ARITH:256B_PACKED_DOUBLE + 8 x FP_ARITH:512B_PACKED_DOUBLE"},
      {"DERIVED_POSTFIX", "N0|N1|N2|N3|+|+|+|", {"A", "B", "C", "D"}, "A + B + C + D"},
      // A constant factor on either side, a difference of sums, an event read twice.
      {"DERIVED_POSTFIX", "2|N0|*|N1|N0|+|-|", {"A", "B"}, "A - B"},
      {"DERIVED_POSTFIX", "N0|N1|-|N0|+|", {"A", "B"}, "2 x A - B"},
      {"DERIVED_POSTFIX", "N1|N0|-|", {"A", "B"}, "-A + B"},
      // What no sum of counts is.
      {"DERIVED_POSTFIX", "N0|N1|/|", {"A", "B"}, "refused: the postfix formula N0|N1|/| divides"},
      {"DERIVED_POSTFIX",
       "N0|N1|*|",
       {"A", "B"},
       "refused: the postfix formula N0|N1|*| multiplies two events"},
      {"DERIVED_POSTFIX", "N0|#|*|", {"A"}, "refused: the postfix formula N0|#|*| uses the CPU's"},
      {"DERIVED_POSTFIX", "N0|1|+|", {"A"}, "refused: the postfix formula N0|1|+| adds a constant"},
      {"DERIVED_POSTFIX", "N0|N0|-|", {"A"}, "refused: the postfix formula N0|N0|-| sums to"},
      {"DERIVED_POSTFIX", "N0|N2|+|", {"A", "B"}, "refused: the postfix formula N0|N2|+| reads N2"},
      {"DERIVED_POSTFIX", "N0|N1|", {"A", "B"}, "refused: the postfix formula N0|N1| does not"},
      {"DERIVED_PS", "", {"A", "B"}, "refused: PAPI derives it as DERIVED_PS: divided"},
      {"DERIVED_CMPD", "", {"A", "B"}, "refused: PAPI derives it as DERIVED_CMPD"},
      {"NOT_DERIVED", "", {}, "refused: PAPI names no native event"},
  }));
  CAPTURE(row.derived, row.postfix);
  const std::string got = text_of(linear_derivation(row.derived, row.postfix, row.natives));
  CHECK_THAT(got, Catch::StartsWith(row.expected));
}

TEST_CASE("A derived event's value is the sum of its terms' counts, never below 0",
          "[perf][events]") {
  // An ungrouped derived preset (A + 2 x B), an event, and a group with a difference (C - D).
  perf::CountedEvent derived;
  derived.event = "PAPI_X_SUM";
  derived.family = "hwperf_process_x_sum_total";
  derived.derived = {{{"A"}, 1}, {{"B"}, 2}};
  derived.encoding = derived.derived.front().encoding;
  perf::CountedEvent plain;
  plain.event = "perf::PAGE-FAULTS";
  plain.family = "hwperf_process_page_faults_total";
  perf::CountedEvent difference;
  difference.event = "PAPI_X_DIFF";
  difference.family = "hwperf_process_x_diff_total";
  difference.derived = {{{"C"}, 1}, {{"D"}, -1}};
  const auto plan = perf::counting_plan({derived, plain}, {{"g", "", {difference, plain}}});
  REQUIRE(plan.units.size() == 3);
  CHECK(plan.units[0].events.size() == 2);  // the terms, one kernel group
  CHECK(plan.units[1].first == 2);
  CHECK(plan.units[1].value == 1);
  CHECK(plan.units[2].first == 3);
  CHECK(plan.units[2].value == 2);
  CHECK(plan.units[2].events.size() == 3);
  REQUIRE(plan.counts == 6);
  REQUIRE(plan.events() == 4);
  CHECK(plan.values[0].terms == std::vector<std::pair<std::size_t, std::int64_t>>{{0, 1}, {1, 2}});
  CHECK(plan.values[2].terms == std::vector<std::pair<std::size_t, std::int64_t>>{{3, 1}, {4, -1}});
  // Two slots: [count * 2 + slot].
  const std::vector<std::uint64_t> counts = {10, 11, 3, 4, 7, 7, 50, 5, 20, 6, 9, 9};
  const auto values = perf::value_totals(plan, counts, 2);
  CHECK(values == std::vector<std::uint64_t>{10 + 2 * 3, 11 + 2 * 4, 7, 7, 50 - 20, 0, 9, 9});
}

TEST_CASE("A preset is counted as what PAPI defines it as here, or refused saying why",
          "[perf][papi][events][kernel_perf]") {
  // Software events this machine opens stand in for a CPU's native events.
  const test::FakePresets presets(
      {{"PAPI_X_FAULTS",
        {true, true, 2, {{{"perf::MINOR-FAULTS", 1}, {"perf::MAJOR-FAULTS", 1}}, ""}}},
       {"PAPI_X_ONE", {true, true, 1, {{{"perf::CONTEXT-SWITCHES", 1}}, ""}}},
       {"PAPI_X_RATE", {true, true, 2, {{}, "PAPI derives it as DERIVED_PS: a rate"}}},
       {"PAPI_X_NONE", {true, false, 1, {}}}});
  auto request = test::process_request(presets);
  request.configured = events::events_from_names({"PAPI_X_FAULTS", "PAPI_X_ONE"});
  const auto resolved = perf::resolve_counted_events(request);
  REQUIRE(resolved.events.size() == 2);
  const auto& faults = resolved.events[0];
  CHECK(faults.family == "hwperf_process_x_faults_total");
  CHECK(faults.counted_as == "perf::MINOR-FAULTS + perf::MAJOR-FAULTS");
  REQUIRE(faults.derived.size() == 2);
  CHECK(faults.derived[1].coefficient == 1);
  CHECK_THAT(faults.help, Catch::Contains("counted as perf::MINOR-FAULTS + perf::MAJOR-FAULTS"));
  CHECK(resolved.events[1].derived.empty());
  CHECK(resolved.events[1].counted_as == "perf::CONTEXT-SWITCHES");
  CHECK(perf::event_lines(resolved.events)[0] ==
        "event PAPI_X_FAULTS -> hwperf_process_x_faults_total (counted as perf::MINOR-FAULTS + "
        "perf::MAJOR-FAULTS)");
  // In a group of the process targets a derived member's terms join the group's kernel group.
  request.configured.clear();
  GroupConfig mine;
  mine.name = "mine";
  for (const char* name : {"PAPI_X_FAULTS", "perf::PAGE-FAULTS"}) {
    GroupEventConfig member;
    member.variable = name[0] == 'P' ? "x" : "faults";
    member.event.event = name;
    mine.events.push_back(member);
  }
  request.groups =
      events::group_definitions({{"mine", {}}}, true, {}, {mine}, "collectors.process.groups");
  const auto grouped = perf::resolve_counted_events(request);
  REQUIRE(grouped.groups.size() == 1);
  CHECK(grouped.groups[0].members[0].derived.size() == 2);
  const auto plan = perf::counting_plan(grouped.events, grouped.groups);
  REQUIRE(plan.units.size() == 1);
  CHECK(plan.units[0].events.size() == 3);
  CHECK(plan.events() == 2);
  request.groups.clear();
  // No sum, no definition here: refused, each saying why.
  request.configured = events::events_from_names({"PAPI_X_RATE", "PAPI_X_NONE"});
  try {
    perf::resolve_counted_events(request);
    FAIL("resolved presets that cannot be counted");
  } catch (const ConfigError& e) {
    REQUIRE(e.problems().size() == 2);
    CHECK_THAT(e.problems()[0], Catch::Contains("PAPI_X_RATE: PAPI derives it as DERIVED_PS") &&
                                    Catch::Contains("papi_avail -e PAPI_X_RATE"));
    CHECK_THAT(e.problems()[1], Catch::Contains("PAPI_X_NONE: this PAPI has no definition of it "
                                                "for this CPU (libpfm4's core PMU is"));
  }
}
