// collectors/process/process_export.cpp: what a scrape of the process targets exports beside the
// counts.
#include "tests/catch.hpp"

#include <iterator>
#include <string>
#include <vector>

#include "collectors/process/process_collector.h"
#include "collectors/process/target_plan.h"
#include "config/config.h"
#include "tests/support/counting_fakes.h"

using namespace hwperf;

// The states are spelled in one table (target_plan.h); the family's help lists them from it.
TEST_CASE("the target state family's help names each state in the order of their table",
          "[process]") {
  test::FakeCounterBoard board;
  const test::FakeCountingBackend backend(board);
  process::ProcessCollectorSettings settings;  // no target: the families are made all the same
  settings.procfs = "/proc";
  settings.backend = &backend;
  process::ProcessCollector collector(settings);
  std::vector<prometheus::MetricFamily> families;
  collector.collect(families);
  const prometheus::MetricFamily* state = nullptr;
  for (const auto& family : families) {
    if (family.name == "hwperf_process_target_state") state = &family;
  }
  REQUIRE(state != nullptr);
  CAPTURE(state->help);
  const auto& states = process::kTargetStateNames;
  std::size_t from = 0;
  for (std::size_t i = 0; i < std::size(states); ++i) {
    const std::string name = states[i].name;
    CAPTURE(name);
    const auto at = state->help.find(name, from);
    REQUIRE(at != std::string::npos);
    from = at + name.size();
    // ": " before the first, " or " before the last, ", " between.
    std::string before = ", ";
    if (i == 0) before = ": ";
    if (i + 1 == std::size(states)) before = " or ";
    CHECK(state->help.compare(at - before.size(), before.size(), before) == 0);
  }
}
