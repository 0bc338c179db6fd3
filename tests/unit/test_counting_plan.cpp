// How the perf-backend collectors (process targets, containers) number what they count: every
// ungrouped event and every group one kernel group, their counts in one order, and one family
// per name however many ways its event is counted.
#include "tests/catch.hpp"

#include "collectors/perf/counted_events.h"

using namespace hwperf;

namespace {

perf::CountedEvent counted(const std::string& event, const std::string& family) {
  perf::CountedEvent e;
  e.event = event;
  e.family = family;
  e.help = "help of " + event;
  e.encoding.name = event;
  return e;
}

}  // namespace

TEST_CASE("A counting plan makes each event and group one unit and each family name one family",
          "[perf][groups]") {
  const std::vector<perf::CountedEvent> alone = {
      counted("perf::TASK-CLOCK", "hwperf_process_task_clock_seconds_total")};
  const std::vector<perf::CountedGroup> groups = {
      {"a",
       "",
       {counted("perf::TASK-CLOCK", "hwperf_process_task_clock_seconds_total"),
        counted("perf::PAGE-FAULTS", "hwperf_process_page_faults_total")}},
      {"b", "", {counted("perf::PAGE-FAULTS", "hwperf_process_page_faults_total")}}};
  const auto plan = perf::counting_plan(alone, groups);
  REQUIRE(plan.units.size() == 3);
  CHECK(plan.units[0].group.empty());
  CHECK(plan.units[1].group == "a");
  CHECK(plan.units[1].events.size() == 2);
  CHECK(plan.units[1].first == 1);
  CHECK(plan.units[2].first == 3);
  REQUIRE(plan.events() == 4);
  REQUIRE(plan.families.size() == 2);
  CHECK(plan.families[0].name == "hwperf_process_task_clock_seconds_total");
  CHECK(plan.families[1].name == "hwperf_process_page_faults_total");
  CHECK(plan.values[0].family == 0);
  CHECK(plan.values[1].family == 0);
  CHECK(plan.values[2].family == 1);
  CHECK(plan.values[3].family == 1);
  Labels labels;
  perf::add_group_label(labels, plan.values[0]);
  CHECK(labels.empty());
  perf::add_group_label(labels, plan.values[3]);
  CHECK(labels == Labels{{"group", "b"}});
  CHECK(perf::counter_families(plan).size() == 2);
}
