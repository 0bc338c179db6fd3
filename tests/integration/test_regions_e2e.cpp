// End to end with the real marker library (compiled only when the hwperf_markers target exists:
// HWPERF_MARKERS_LIBRARY is defined then, tests/CMakeLists.txt): a program instrumented with
// PAPI's high-level API, unchanged, under `hwperf_exporter --experiment.regions -- ./prog`.
// Expectations come from what the program measured of itself; software events only.
#ifdef HWPERF_MARKERS_LIBRARY

#include "tests/catch.hpp"

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/support.h"

using namespace hwperf;

namespace {

double reported_cpu_seconds(const std::string& stdout_text) {
  const std::string key = "compute_cpu_seconds=";
  const auto at = stdout_text.find(key);
  if (at == std::string::npos) throw std::runtime_error("the program printed: " + stdout_text);
  return std::stod(stdout_text.substr(at + key.size()));
}

}  // namespace

TEST_CASE("A PAPI_hl program's regions under --once --experiment.regions", "[live][region]") {
  test::TempDir dir;
  const auto output = (dir.path() / "run.prom").string();
  const int calls = 3;
  const double sleep_seconds = 0.3;
  const auto result = test::run_exporter(
      {"--once", "--experiment.regions", "--output=" + output, "--", HWPERF_TEST_REGIONS_PROG,
       std::to_string(calls), "200", std::to_string(static_cast<int>(sleep_seconds * 1000))},
      60);
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  const double spun = reported_cpu_seconds(result.out);
  const auto samples = test::parse_exposition(test::read_file(output));
  const std::string target = "hwperf_test_regions_prog";
  CHECK(test::value_of(samples, "hwperf_region_calls_total",
                       {{"target", target}, {"region", "compute"}}) == calls);
  CHECK(test::value_of(samples, "hwperf_region_calls_total",
                       {{"target", target}, {"region", "sleep"}}) == 1);
  const double compute = test::value_of(samples, "hwperf_region_task_clock_seconds_total",
                                        {{"target", target}, {"region", "compute"}});
  CHECK(compute == Approx(spun).epsilon(0.10));
  const double asleep = test::value_of(samples, "hwperf_region_task_clock_seconds_total",
                                       {{"target", target}, {"region", "sleep"}});
  CHECK(asleep < 0.05 * sleep_seconds);
  // The summary's table per region, the sum row last.
  CHECK_THAT(result.err, Catch::Contains(" Region compute:"));
  CHECK_THAT(result.err, Catch::Contains(" Region sleep:"));
}

TEST_CASE("Served --experiment.regions: a region counter grows between two scrapes",
          "[live][region]") {
  test::RunningExporter exporter({"--experiment.regions", "--linger=0s", "--",
                                  HWPERF_TEST_REGIONS_PROG, "1", "50", "10", "4"});
  const auto value = [&] {
    const auto response = exporter.get("/metrics");
    const auto samples = test::parse_exposition(response.body);
    return test::value_of(samples, "hwperf_region_calls_total", {{"region", "compute"}});
  };
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const double first = value();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const double second = value();
  INFO(exporter.stderr_text());
  CHECK(second > first);
}

#endif
