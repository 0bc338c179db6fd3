// Needs a real PMU, so hidden ([.hardware]); run on a physical machine (or a VM with PMU
// passthrough) as docs/development.md, "Tests that need real hardware", says:
//   sudo ./build/tests/hwperf_tests "[.hardware]"
#include "tests/support/papi_live_support.h"

#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <map>

#include "collectors/events/event_specs.h"
#include "collectors/papi/papi_factory.h"
#include "collectors/papi/papi_library.h"
#include "collectors/papi/papi_source.h"
#include "config/errors.h"
#include "exporter/exposition.h"

using namespace hwperf;
using namespace hwperf::test::papi_live;
using test::find_samples;
using test::Sample;
using test::scrape;

TEST_CASE("PAPI_TOT_INS and PAPI_TOT_CYC count on a real PMU", "[.hardware]") {
  require_system_wide_perf();
  if (!has_hardware_pmu()) FAIL("no hardware PMU here (/sys/bus/event_source/devices/cpu)");
  const Topology topology = live_topology();
  auto collector = make_papi_collector(config_for({"PAPI_TOT_INS", "PAPI_TOT_CYC"}, "0"), topology);

  const auto before = scrape(*collector);
  // At least one instruction per iteration (an add and a compare-and-branch, kept by volatile).
  constexpr std::uint64_t kIterations = 200000000;
  const double seconds = busy_on_cpu(0, kIterations);
  const auto after = scrape(*collector);

  const double instructions = delta_on(before, after, "hwperf_cpu_instructions_total", 0);
  const double cycles = delta_on(before, after, "hwperf_cpu_cycles_total", 0);
  CAPTURE(instructions, cycles, seconds);
  CHECK(instructions >= static_cast<double>(kIterations));
  CHECK(cycles > 0);
  CHECK(cycles <= seconds * 10e9);  // no CPU runs at 10 GHz
  for (const auto& sample : find_samples(after, "hwperf_papi_event_set_events")) {
    CHECK(sample.labels.at("binding") == "cpu_attach");
  }
}

TEST_CASE(
    "per-CPU PAPI_TOT_INS read from another CPU: a busy CPU counts far more than the idle "
    "one the scrape runs on",
    "[.hardware]") {
  require_system_wide_perf();
  if (!has_hardware_pmu()) {
    FAIL(
        "no hardware PMU here (/sys/bus/event_source/devices/cpu): this test counts PAPI_TOT_INS "
        "on CPUs 0 and 1 through PAPI_CPU_ATTACH; run it on a physical machine or a VM with PMU "
        "passthrough");
  }
  const Topology topology = live_topology();
  if (topology.find(0) == nullptr || topology.find(1) == nullptr) {
    FAIL("this test needs CPUs 0 and 1 online");
  }
  // PAPI 7.0's rdpmc fast read (issue 8, item 1) reads the counter of the CPU that calls
  // PAPI_read, whatever CPU the set is attached to: scraping from CPU 0 would then give CPU 1 the
  // counts of idle CPU 0. So the scrapes run pinned to CPU 0 while a thread spins on CPU 1.
  auto collector = make_papi_collector(config_for({"PAPI_TOT_INS"}, "0-1"), topology);
  for (const auto& sample : find_samples(scrape(*collector), "hwperf_papi_event_set_events")) {
    CHECK(sample.labels.at("binding") == "cpu_attach");
  }

  std::atomic<bool> stop{false};
  std::atomic<int> pinned{0};           // 1 once the spinner runs on CPU 1, -1 if it cannot
  std::atomic<std::uint64_t> spins{0};  // at least one instruction each
  std::thread spinner([&] {
    if (!pin_this_thread(1).empty()) {
      pinned = -1;
      return;
    }
    pinned = 1;
    while (!stop.load(std::memory_order_relaxed)) spins.fetch_add(1, std::memory_order_relaxed);
  });
  struct Joiner {
    std::atomic<bool>& stop;
    std::thread& thread;
    ~Joiner() {
      stop = true;
      thread.join();
    }
  } joiner{stop, spinner};

  while (pinned.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (pinned.load() < 0) FAIL("cannot pin a thread to CPU 1");

  std::vector<Sample> before;
  std::vector<Sample> after;
  std::uint64_t spun = 0;  // spins between the end of the first scrape and the start of the second
  const std::string problem = run_pinned(0, [&]() -> std::string {
    before = scrape(*collector);
    const std::uint64_t first = spins.load();
    std::this_thread::sleep_for(std::chrono::seconds(1));  // CPU 0 idles meanwhile
    spun = spins.load() - first;
    after = scrape(*collector);
    return "";
  });
  if (!problem.empty()) FAIL(problem);

  const double busy = delta_on(before, after, "hwperf_cpu_instructions_total", 1);
  const double idle = delta_on(before, after, "hwperf_cpu_instructions_total", 0);
  CAPTURE(busy, idle, spun);
  CHECK(busy >= static_cast<double>(spun));
  // CPU 0 runs only the sleeping scraper and whatever else the machine does; with the fast
  // read on, both series would show CPU 0's count.
  CHECK(idle < 0.5 * busy);
}

TEST_CASE("more hardware events than counters are multiplexed and every one is counted",
          "[.hardware]") {
  if (!has_hardware_pmu()) {
    FAIL(
        "no hardware PMU here (/sys/bus/event_source/devices/cpu): this test overflows the PMU's "
        "counters to make PAPI multiplex; run it on a physical machine or a VM with PMU "
        "passthrough");
  }
  require_system_wide_perf();
  const Topology topology = live_topology();
  // Presets most x86 PMUs (Intel and AMD) can count. A core has 2-8 general-purpose counters
  // (one may be taken by the NMI watchdog) plus a few fixed ones, and several of these presets are
  // derived from two native events, so a dozen of them never fit at once.
  const char* candidates[] = {"PAPI_TOT_INS", "PAPI_TOT_CYC", "PAPI_REF_CYC", "PAPI_BR_INS",
                              "PAPI_BR_MSP",  "PAPI_BR_CN",   "PAPI_BR_TKN",  "PAPI_BR_NTK",
                              "PAPI_L1_DCM",  "PAPI_L1_ICM",  "PAPI_L2_DCM",  "PAPI_L2_ICM",
                              "PAPI_L2_TCM",  "PAPI_L2_DCA",  "PAPI_L3_TCM",  "PAPI_LD_INS",
                              "PAPI_SR_INS",  "PAPI_TLB_DM",  "PAPI_TLB_IM",  "PAPI_RES_STL"};
  constexpr std::size_t kNeeded = 12;
  papi::init_library(PathsConfig{}.procfs);
  std::vector<std::string> events;
  std::string unavailable;
  for (const char* name : candidates) {
    if (papi::lookup_event(name).available) {
      events.push_back(name);
    } else {
      unavailable += std::string(unavailable.empty() ? "" : ", ") + name;
    }
  }
  if (events.size() < kNeeded) {
    FAIL("only " << events.size() << " of the candidate presets are available on this PMU "
                 << "(PAPI_query_named_event; not available: " << unavailable << "); this test "
                 << "needs " << kNeeded << " to overflow the hardware counters");
  }
  auto collector = make_papi_collector(config_for(events, "0"), topology);

  const auto first = scrape(*collector);
  constexpr std::uint64_t kIterations = 100000000;
  busy_on_cpu(0, kIterations);
  const auto second = scrape(*collector);

  for (const auto& drop : find_samples(second, "hwperf_papi_event_dropped")) {
    CAPTURE(drop.labels.at("event"), drop.labels.at("reason"));
    FAIL_CHECK("an event was dropped instead of multiplexed");
  }
  bool multiplexed = false;
  for (const auto& set : find_samples(second, "hwperf_papi_event_set_multiplexed")) {
    multiplexed = multiplexed || set.value == 1.0;
  }
  CHECK(multiplexed);
  for (const auto& event : events) {
    const std::string family = "hwperf_cpu_" + events::default_metric_base(event) + "_total";
    CAPTURE(event, family);
    const auto before = find_samples(first, family, {{"cpu", "0"}});
    const auto after = find_samples(second, family, {{"cpu", "0"}});
    REQUIRE(before.size() == 1);  // counted: a series on CPU 0
    REQUIRE(after.size() == 1);
    CHECK(after[0].value >= before[0].value);  // scaled estimates, but never going back
  }
  // Scaled, but an estimate of the loop's instructions (at least one per iteration) on CPU 0.
  if (std::find(events.begin(), events.end(), "PAPI_TOT_INS") == events.end()) return;
  const double instructions = delta_on(first, second, "hwperf_cpu_instructions_total", 0);
  CAPTURE(instructions);
  CHECK(instructions >= 0.5 * static_cast<double>(kIterations));
}
