// PAPI presets in the perf-backend collectors (process targets, containers), issue 35 item 11:
// what PAPI defines a preset as on a CPU, read from PAPI itself (PAPI_get_event_info) with
// libpfm4 made to see Ice Lake-SP (LIBPFM_FORCE_PMU=icx: papi_events.csv's "CPU,icx"), and a
// derived preset summed by the counting layer for a real process.
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "collectors/events/event_specs.h"
#include "collectors/papi/papi_presets.h"
#include "collectors/perf/counted_events.h"
#include "collectors/perf/pfm_encoder.h"
#include "collectors/process/process_collector.h"
#include "config/errors.h"
#include "tests/catch.hpp"
#include "tests/support/workload_driver.h"
#include "tests/support/support.h"
#include "tests/support/preset_fakes.h"
#include "topology/topology.h"

using namespace hwperf;

// papi_events.csv (PAPI 7.0), "CPU,icx": PAPI_L1_DCM is NOT_DERIVED, PAPI_L1_TCM DERIVED_ADD,
// PAPI_BR_UCN DERIVED_SUB and PAPI_DP_OPS the postfix N0|N1|2|*|+|N2|4|*|+|N3|8|*|+|. This machine
// need not open Ice Lake-SP's events (a VM without a PMU cannot): resolved, or refused only for
// that, each preset is counted as what PAPI defines it as.
TEST_CASE("(child) process targets count PAPI's Ice Lake-SP presets as PAPI defines them",
          "[.forced_icx_child]") {
  const char* forced = std::getenv("LIBPFM_FORCE_PMU");
  REQUIRE(forced != nullptr);
  REQUIRE(std::string(forced) == "icx");
  const std::map<std::string, std::string> expected = {
      {"PAPI_L1_DCM", "L1D:REPLACEMENT"},
      {"PAPI_L1_TCM", "L1D:REPLACEMENT + L2_RQSTS:ALL_CODE_RD"},
      {"PAPI_BR_UCN", "BR_INST_RETIRED:ALL_BRANCHES - BR_INST_RETIRED:COND"},
      {"PAPI_DP_OPS",
       "FP_ARITH:SCALAR_DOUBLE + 2 x FP_ARITH:128B_PACKED_DOUBLE + 4 x "
       "FP_ARITH:256B_PACKED_DOUBLE + 8 x FP_ARITH:512B_PACKED_DOUBLE"}};
  auto request = test::process_request(papi::preset_catalog());
  for (const auto& [preset, natives] : expected) {
    request.configured.push_back(events::events_from_names({preset.c_str()}).front());
  }
  std::string text;
  try {
    const auto resolved = perf::resolve_counted_events(request);
    for (const auto& line : perf::event_lines(resolved.events)) text += line + "\n";
  } catch (const ConfigError& e) {
    for (const auto& problem : e.problems()) {
      text += problem + "\n";
      // Refused only because this machine cannot open the events.
      CHECK_THAT(problem, Catch::Contains("perf_event_open"));
    }
  }
  INFO(text);
  for (const auto& [preset, natives] : expected) {
    CHECK_THAT(text, Catch::Contains(preset) && Catch::Contains("(counted as " + natives + ")"));
  }
  CHECK_THAT(text, !Catch::Contains("derived") && !Catch::Contains("name the native event"));
}

TEST_CASE("process targets count a preset PAPI derives as a sum or difference of native events",
          "[papi][process][x86]") {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  int exit_code = -1;
  const std::string out =
      test::run_shell("LIBPFM_FORCE_PMU=icx '" + self + "' '[.forced_icx_child]'", &exit_code);
  INFO(out);
  CHECK(exit_code == 0);
  CHECK_THAT(out, Catch::Contains("1 test case"));
}

// The counting layer sums a derived preset's terms for a real process: PAPI_X_FAULTS, made up as
// perf::MINOR-FAULTS + perf::MAJOR-FAULTS, counts what perf::PAGE-FAULTS counts (the kernel
// counts every fault at entry, and each completed one as minor or major: within 10 %).
TEST_CASE("A process target exports a derived preset as the sum of its terms", "[live][process]") {
  const test::FakePresets presets(
      {{"PAPI_X_FAULTS",
        {true, true, 2, {{{"perf::MINOR-FAULTS", 1}, {"perf::MAJOR-FAULTS", 1}}, ""}}}});
  const std::size_t pages = 8192;  // 32 MiB
  test::Workload workload({"fork", std::to_string(pages)});
  Config config;
  config.get<ProcessCollectorConfig>().events_given = true;
  config.get<ProcessCollectorConfig>().events =
      events::events_from_names({"perf::PAGE-FAULTS", "PAPI_X_FAULTS"});
  ProcessTargetConfig target;
  target.name = "tree";
  target.selector = ProcessTargetConfig::Selector::pid;
  target.pid = workload.pid();
  config.get<ProcessCollectorConfig>().targets.push_back(target);
  const Topology topology = Topology::load(TopologyConfig{});
  auto collector = process::make_process_collector(config, topology, presets);
  workload.say("go");
  REQUIRE(workload.line().rfind("pages ", 0) == 0);
  const auto samples = test::scrape(*collector);
  const double faults =
      test::value_of(samples, "hwperf_process_page_faults_total", {{"target", "tree"}});
  const double summed =
      test::value_of(samples, "hwperf_process_x_faults_total", {{"target", "tree"}});
  INFO("page faults " << faults << ", minor + major " << summed);
  CHECK(summed >= static_cast<double>(pages));
  CHECK(summed == Approx(faults).epsilon(0.10));
  // Its terms are one kernel group, whose times the unit's are.
  CHECK(test::value_of(samples, "hwperf_process_event_enabled_seconds_total",
                       {{"target", "tree"}, {"event", "PAPI_X_FAULTS"}}) > 0);
}
