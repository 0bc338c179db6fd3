// How the perf-backend collectors (process targets, containers) number what they count: every
// ungrouped event and every group one kernel group, their counts in one order, and one family
// per name however many ways its event is counted.
#include "tests/catch.hpp"

#include <algorithm>

#include "collectors/events/event_specs.h"
#include "collectors/events/groups.h"
#include "collectors/perf/counted_events.h"
#include "tests/support/preset_fakes.h"

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

// Issue 35, item 10: one event, one family, whether it is counted alone or in a built-in group.
TEST_CASE("An event counted alone and in the software group is exported in one family",
          "[perf][groups][events][kernel_perf]") {
  const test::FakePresets presets;  // PAPI out of the picture
  auto request = test::process_request(presets);
  request.configured = events::events_from_names({"perf::CPU-MIGRATIONS"});
  request.groups =
      events::group_definitions({{"software", {}}}, true, {}, {}, "collectors.process.groups");
  const auto resolved = perf::resolve_counted_events(request);
  REQUIRE(resolved.events.size() == 1);
  REQUIRE(resolved.groups.size() == 1);
  std::string grouped;
  for (const auto& member : resolved.groups[0].members) {
    if (member.event == "perf::CPU-MIGRATIONS") grouped = member.family;
  }
  CHECK(resolved.events[0].family == "hwperf_process_migrations_total");
  CHECK(grouped == resolved.events[0].family);
  const auto plan = perf::counting_plan(resolved.events, resolved.groups);
  CHECK(std::count_if(plan.families.begin(), plan.families.end(), [](const auto& family) {
          return family.name.find("migrations") != std::string::npos;
        }) == 1);
}
