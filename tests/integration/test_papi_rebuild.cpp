// A perf_event group the kernel put in ERROR state (a pinned group pushed off the counters)
// reads 0 bytes until it is enabled again. PAPI's stop reads first, fails, and leaves the set
// running, so stopping and starting never recovers it (papi.c PAPI_stop; issue 18). The exporter
// rebuilds the set instead. The fault is made with an LD_PRELOAD shim (tests/shims).
#include "tests/support/papi_live_support.h"

#include <chrono>
#include <thread>

using namespace hwperf;
using namespace hwperf::test::papi_live;

TEST_CASE(
    "a perf group stuck in the kernel's ERROR state is rebuilt: read errors stop after one "
    "rebuild and the counts advance again",
    "[papi][e2e][live]") {
  require_system_wide_perf();
  test::TempDir dir;
  // Two software events in one set on one CPU: one group, read through its leader.
  const auto config = dir.write("hwperf.yml",
                                "collectors:\n  rapl:\n    enabled: false\n  papi:\n"
                                "    cpus: \"0\"\n    events:\n"
                                "      - perf::CPU-CLOCK\n      - perf::PAGE-FAULTS\n");
  const auto arm = dir.path() / "arm";
  test::RunningExporter exporter({"--config.file=" + config.string()},
                                 {{"LD_PRELOAD", HWPERF_PERF_ERROR_SHIM},
                                  {"HWPERF_SHIM_ARM", arm.string()},
                                  {"ASAN_OPTIONS", "verify_asan_link_order=0"}});
  const auto scrape = [&] {
    const auto response = exporter.get("/metrics");
    REQUIRE(response.status == 200);
    return test::parse_exposition(response.body);
  };
  const std::map<std::string, std::string> cpu0 = {{"cpu", "0"}};
  const auto errors = [&](const std::vector<test::Sample>& samples) {
    return test::value_of(samples, "hwperf_papi_read_errors_total", cpu0);
  };
  const auto clock = [&](const std::vector<test::Sample>& samples) {
    return test::value_of(samples, "hwperf_cpu_clock_seconds_total", cpu0);
  };
  REQUIRE(errors(scrape()) == 0);
  dir.write("arm", "");  // the next perf descriptor read is stuck from now on

  // The failure shows, and is counted once per scrape until the set is rebuilt (the maintenance
  // thread runs every second).
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(10 * HWPERF_SLOWDOWN);
  auto samples = scrape();
  while (errors(samples) == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    samples = scrape();
  }
  REQUIRE(errors(samples) > 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(2500 * HWPERF_SLOWDOWN));
  const auto settled = scrape();
  const double settled_errors = errors(settled);
  const double settled_clock = clock(settled);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const auto later = scrape();
  INFO(exporter.stderr_text());
  CAPTURE(settled_errors, settled_clock, clock(later));
  CHECK(errors(later) == settled_errors);      // no more failures: the rebuilt set reads
  CHECK(clock(later) - settled_clock >= 0.5);  // and counts
  CHECK_THAT(exporter.stderr_text(), Catch::Contains("reads again"));
}
