// CPU hotplug on the live machine: CPU 1 is taken offline and brought back while the PAPI
// collector counts perf::CPU-CLOCK on it. Needs root and a CPU 1 that may go offline (the suite
// runs as root in CI). It is a [live] test, so ctest runs nothing beside it, and it brings CPU 1
// back whatever happens, even when an assertion fails.
#include "tests/support/papi_live_support.h"

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "collectors/papi/papi_factory.h"

using namespace hwperf;
using namespace hwperf::test::papi_live;
using test::scrape;

namespace {

// Scrapes until `done` holds for the samples, for at most `seconds`; returns the last scrape.
template <typename Done>
std::vector<test::Sample> scrape_until(Collector& collector, double seconds, Done done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  auto samples = scrape(collector);
  while (!done(samples) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    samples = scrape(collector);
  }
  return samples;
}

}  // namespace

TEST_CASE(
    "a CPU taken offline and brought back counts again, says it was offline, and logs "
    "each transition once",
    "[papi][live][hotplug]") {
  require_system_wide_perf();
  if (const auto problem = test::cpu1_hotplug_problem(); !problem.empty()) FAIL(problem);
  REQUIRE(test::cpu1_online());
  const Topology topology = live_topology();
  REQUIRE(topology.find(1) != nullptr);
  test::CapturedStderr log;
  auto collector = make_papi_collector(config_for({"perf::CPU-CLOCK"}, "0-1"), topology);
  const std::string clock = "hwperf_cpu_clock_seconds_total";
  const std::string online = "hwperf_cpu_online";
  const auto first = scrape(*collector);
  CHECK(value_on(first, online, 1) == 1);

  double while_off = 0;
  {
    test::Cpu1Offline offline;
    REQUIRE(offline.took_offline());
    const auto off = scrape_until(*collector, 10, [&](const std::vector<test::Sample>& samples) {
      return value_on(samples, online, 1) == 0;
    });
    CHECK(value_on(off, online, 1) == 0);
    CHECK(value_on(off, online, 0) == 1);
    while_off = value_on(off, clock, 1);
    std::this_thread::sleep_for(std::chrono::seconds(1));
    // Offline, CPU 1's clock does not pretend to move.
    CHECK(value_on(scrape(*collector), clock, 1) == while_off);
    offline.bring_back();
    REQUIRE(test::cpu1_online());
  }
  const auto back = scrape_until(*collector, 10, [&](const std::vector<test::Sample>& samples) {
    return value_on(samples, online, 1) == 1;
  });
  REQUIRE(value_on(back, online, 1) == 1);
  // Its sets were rebuilt when it came back: the clock advances again, from the total it had.
  const double resumed = value_on(back, clock, 1);
  CHECK(resumed >= while_off);
  const auto pause = std::chrono::milliseconds(1000);
  std::this_thread::sleep_for(pause);
  const double later = value_on(scrape(*collector), clock, 1);
  CAPTURE(while_off, resumed, later);
  CHECK(later - resumed >= 0.5);
  const std::string text = log.text();
  INFO(text);
  CHECK(test::occurrences(text, "CPU 1 is offline") == 1);
  CHECK(test::occurrences(text, "CPU 1 is online again") == 1);
}
