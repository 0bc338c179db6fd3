// The PAPI collector against this machine's real PAPI and kernel.
//
// [papi][live] tests count perf's software events, which every Linux kernel with perf_event has,
// so they run everywhere CI does (as root, or with kernel.perf_event_paranoid <= 0); where that
// is not given they FAIL saying so rather than skip. Where a behaviour depends on whether the
// machine has a hardware PMU (this project's CI VM has none), each branch asserts what must
// happen on that kind of machine.
//
// The binary end to end is in test_papi_e2e.cpp; tests that need a real PMU in
// tests/hardware/test_papi_hardware.cpp.
#include "tests/support/papi_live_support.h"

#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <map>
#include <thread>

#include "collectors/events/event_specs.h"
#include "collectors/papi/papi_factory.h"
#include "collectors/papi/papi_library.h"
#include "collectors/papi/papi_source.h"
#include "config/errors.h"
#include "exporter/exposition.h"

using namespace hwperf;
using namespace hwperf::test::papi_live;
using test::find_samples;
using test::scrape;

TEST_CASE("CPU-CLOCK advances by wall time on every CPU, and page faults land on their CPU",
          "[papi][live]") {
  require_system_wide_perf();
  const Topology topology = live_topology();
  if (topology.cpus().size() < 2) FAIL("this test needs at least 2 CPUs online");
  auto collector =
      make_papi_collector(config_for({"perf::CPU-CLOCK", "perf::PAGE-FAULTS"}, "all"), topology);

  // Each CPU's clock advances with wall time (2% for timer granularity).
  const auto [first, second, shortest, longest] =
      scrape_twice(*collector, std::chrono::milliseconds(1000));
  for (unsigned cpu : topology.cpus()) {
    CAPTURE(cpu, shortest, longest);
    const double advanced = delta_on(first, second, "hwperf_cpu_clock_seconds_total", cpu);
    CHECK(advanced >= 0.98 * shortest);
    CHECK(advanced <= 1.02 * longest);
  }

  const auto before = scrape(*collector);
  const std::size_t pages = fault_pages_on_cpu(1, 200u << 20);
  const auto after = scrape(*collector);
  const double on_cpu1 = delta_on(before, after, "hwperf_cpu_page_faults_total", 1);
  const double on_cpu0 = delta_on(before, after, "hwperf_cpu_page_faults_total", 0);
  CAPTURE(pages, on_cpu1, on_cpu0);
  // Every first touch of a page faults on CPU 1. CPU 0 sees only what else ran meanwhile (on a
  // shared CI host other processes fault too: a few thousand here), far fewer than the pages.
  CHECK(on_cpu1 >= 0.95 * static_cast<double>(pages));
  CHECK(on_cpu0 < 0.5 * static_cast<double>(pages));
}

TEST_CASE("package granularity sums CPU-CLOCK over each package's CPUs", "[papi][live]") {
  require_system_wide_perf();
  const Topology topology = live_topology();
  auto config = config_for({"perf::CPU-CLOCK"}, "all");
  config.granularity = Granularity::package;
  auto collector = make_papi_collector(config, topology);

  const auto [first, second, shortest, longest] =
      scrape_twice(*collector, std::chrono::milliseconds(500));
  const auto packages = topology.packages();
  CHECK(find_samples(second, "hwperf_package_clock_seconds_total").size() == packages.size());
  for (unsigned package : packages) {
    const std::map<std::string, std::string> labels = {{"package", std::to_string(package)}};
    const auto before = find_samples(first, "hwperf_package_clock_seconds_total", labels);
    const auto after = find_samples(second, "hwperf_package_clock_seconds_total", labels);
    REQUIRE(before.size() == 1);
    REQUIRE(after.size() == 1);
    // Each CPU's clock advances with wall time, so the package's sum by that times its CPUs.
    const auto cpus = static_cast<double>(topology.cpus_of_package(package).size());
    CAPTURE(package, cpus, shortest, longest);
    CHECK(after[0].value - before[0].value >= 0.98 * cpus * shortest);
    CHECK(after[0].value - before[0].value <= 1.02 * cpus * longest);
  }
}

TEST_CASE("the counting domain is applied: user-mode faults count in user, not kernel",
          "[papi][live]") {
  require_system_wide_perf();
  const Topology topology = live_topology();
  if (topology.cpus().size() < 2) FAIL("this test needs at least 2 CPUs online");
  // Two collectors at once: only qualifier sets can coexist on one CPU (PAPI runs one attached
  // set per CPU per process).
  auto user_config = config_for({"perf::PAGE-FAULTS"}, "1");
  user_config.attach = PapiAttachMode::qualifier;
  user_config.domain = CountingDomain::user;
  auto kernel_config = user_config;
  kernel_config.domain = CountingDomain::kernel;
  auto user = make_papi_collector(user_config, topology);
  auto kernel = make_papi_collector(kernel_config, topology);

  const auto user_before = scrape(*user);
  const auto kernel_before = scrape(*kernel);
  const std::size_t pages = fault_pages_on_cpu(1, 200u << 20);
  const double user_faults = value_on(scrape(*user), "hwperf_cpu_page_faults_total", 1) -
                             value_on(user_before, "hwperf_cpu_page_faults_total", 1);
  const double kernel_faults = value_on(scrape(*kernel), "hwperf_cpu_page_faults_total", 1) -
                               value_on(kernel_before, "hwperf_cpu_page_faults_total", 1);
  CAPTURE(pages, user_faults, kernel_faults);
  CHECK(user_faults >= 0.95 * static_cast<double>(pages));
  // Other processes' kernel-mode faults on CPU 1 are the only ones the kernel domain may see.
  CHECK(kernel_faults < 0.5 * static_cast<double>(pages));
}

TEST_CASE("auto binding: CPU attach with a hardware PMU, per-CPU qualifiers without",
          "[papi][live]") {
  require_system_wide_perf();
  const Topology topology = live_topology();
  if (topology.cpus().size() < 2) FAIL("this test needs at least 2 CPUs online");
  const std::vector<std::string> events = {"perf::CPU-CLOCK", "perf::PAGE-FAULTS",
                                           "perf::CONTEXT-SWITCHES", "perf::CPU-MIGRATIONS"};
  auto collector = make_papi_collector(config_for(events, "0-1"), topology);
  const auto samples = scrape(*collector);

  const std::string expected = has_hardware_pmu() ? "cpu_attach" : "qualifier";
  const auto sets = find_samples(samples, "hwperf_papi_event_set_events");
  REQUIRE(sets.size() >= 2);
  double counted = 0;
  for (const auto& set : sets) {
    CHECK(set.labels.at("binding") == expected);
    counted += set.value;
  }
  CHECK(counted == static_cast<double>(events.size() * 2));
  CHECK(find_samples(samples, "hwperf_papi_event_dropped").empty());
}

TEST_CASE("unknown events are configuration errors, all listed at once", "[papi][live]") {
  require_system_wide_perf();
  const Topology topology = live_topology();
  std::vector<std::string> problems;
  try {
    make_papi_collector(
        config_for({"perf::CPU-CLOCK", "perf::NO-SUCH-EVENT", "PAPI_NO_SUCH"}, "all"), topology);
  } catch (const ConfigError& e) {
    problems = e.problems();
  }
  REQUIRE(problems.size() == 2);
  CHECK_THAT(problems[0], Catch::Contains("perf::NO-SUCH-EVENT") &&
                              Catch::Contains("live.yml:6:7") && Catch::Contains("papi_avail") &&
                              Catch::Contains("papi_native_avail"));
  CHECK_THAT(problems[1], Catch::Contains("PAPI_NO_SUCH") && Catch::Contains("live.yml:7:7"));
}

TEST_CASE("an event PAPI knows but cannot count here is dropped, visibly", "[papi][live]") {
  require_system_wide_perf();
  const Topology topology = live_topology();
  auto collector =
      make_papi_collector(config_for({"PAPI_TOT_INS", "perf::CPU-CLOCK"}, "all"), topology);
  const auto samples = scrape(*collector);
  CHECK(find_samples(samples, "hwperf_cpu_clock_seconds_total").size() == topology.cpus().size());
  const auto dropped =
      find_samples(samples, "hwperf_papi_event_dropped", {{"event", "PAPI_TOT_INS"}});
  if (has_hardware_pmu()) {
    CHECK(dropped.empty());
    CHECK(find_samples(samples, "hwperf_cpu_instructions_total").size() == topology.cpus().size());
  } else {
    // One series for the event and its reason, counting every CPU and listing them.
    REQUIRE(dropped.size() == 1);
    CHECK(dropped[0].value == static_cast<double>(topology.cpus().size()));
    CHECK(dropped[0].labels.at("cpus") == format_cpu_list(topology.cpus()));
    CHECK_FALSE(dropped[0].labels.at("reason").empty());
    CHECK(find_samples(samples, "hwperf_cpu_instructions_total").empty());
  }
}

TEST_CASE("when none of the named events can be counted, startup fails with the remedy",
          "[papi][live]") {
  require_system_wide_perf();
  const Topology topology = live_topology();
  const auto config = config_for({"PAPI_TOT_INS", "PAPI_TOT_CYC"}, "all");
  if (has_hardware_pmu()) {
    CHECK_NOTHROW(make_papi_collector(config, topology));
  } else {
    CHECK_THROWS_WITH(make_papi_collector(config, topology), Catch::Contains("PAPI_TOT_INS") &&
                                                                 Catch::Contains("PAPI_TOT_CYC") &&
                                                                 Catch::Contains("papi_avail"));
  }
}

TEST_CASE("the default event set is best effort and counts something here", "[papi][live]") {
  require_system_wide_perf();
  const Topology topology = live_topology();
  PapiCollectorConfig config;  // no events: the defaults
  auto collector = make_papi_collector(config, topology);
  const auto samples = scrape(*collector);
  // The scheduler's software events need no PMU.
  CHECK(find_samples(samples, "hwperf_cpu_context_switches_total").size() ==
        topology.cpus().size());
  if (!has_hardware_pmu()) {
    // The hardware events are in the default groups now (ipc, branch, cache, freq): without a
    // PMU each is skipped whole, with a warning, rather than dropped event by event.
    CHECK(find_samples(samples, "hwperf_cpu_instructions_total").empty());
    CHECK(find_samples(samples, "hwperf_cpu_cycles_total").empty());
    CHECK(find_samples(samples, "hwperf_papi_event_dropped").empty());
  }
}

TEST_CASE("the check-config report says per event whether it can be counted", "[papi][live]") {
  require_system_wide_perf();
  const Topology topology = live_topology();
  const auto lines =
      papi_check_report(config_for({"perf::CPU-CLOCK", "PAPI_TOT_INS"}, "all"), topology);
  auto line_of = [&](const std::string& event) {
    const auto it = std::find_if(lines.begin(), lines.end(), [&](const std::string& line) {
      return line.rfind(event + " ->", 0) == 0;
    });
    return it == lines.end() ? std::string() : *it;
  };
  CHECK_THAT(line_of("perf::CPU-CLOCK"), Catch::Contains("hwperf_cpu_clock_seconds_total") &&
                                             Catch::Contains("countable on CPUs"));
  if (has_hardware_pmu()) {
    CHECK_THAT(line_of("PAPI_TOT_INS"), Catch::Contains("countable on CPUs"));
  } else {
    CHECK_THAT(line_of("PAPI_TOT_INS"),
               Catch::Contains("NOT countable") && Catch::Contains("Event does not exist"));
  }
}

TEST_CASE("a source with hundreds of qualifier sets is torn down within a second", "[papi][live]") {
  require_system_wide_perf();
  const Topology topology = live_topology();
  // Each CPU entry gets its own qualifier set and owner thread, so listing this machine's CPUs
  // over and over stands in for a large machine (256 CPUs, one qualifier set each).
  constexpr std::size_t kSets = 256;
  papi::OpenRequest request;
  request.events = {"perf::CPU-CLOCK", "perf::CONTEXT-SWITCHES"};
  request.attach = PapiAttachMode::qualifier;
  while (request.cpus.size() < kSets) {
    for (unsigned cpu : topology.cpus()) request.cpus.push_back(cpu);
  }
  papi::init_library(PathsConfig{}.procfs);
  auto source = papi::open_papi_source(request);
  REQUIRE(source->layout().dropped.empty());
  REQUIRE(source->layout().event_sets.size() == request.cpus.size());
  std::vector<std::int64_t> values(source->layout().counters.size());
  std::vector<std::string> failures(source->layout().event_sets.size());
  source->read(values, failures);
  for (const auto& failure : failures) CHECK(failure.empty());

  // What SIGTERM does to the collector: every owner stops, cleans up and destroys its set.
  const auto start = Clock::now();
  source.reset();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  CAPTURE(request.cpus.size(), seconds);
  CHECK(seconds < 1.0);
}

TEST_CASE("rebuilding a real event set zeroes it, on its owner thread, and it counts again",
          "[papi][live]") {
  require_system_wide_perf();
  const Topology topology = live_topology();
  if (topology.cpus().size() < 2) FAIL("this test needs at least 2 CPUs online");
  // What the collector does to a set that failed to read or whose CPU came back (rebuild()): the
  // set destroyed and built again on its owner thread, handed over from another thread. With a
  // hardware PMU the sets are attached and share one owner; without, each is a qualifier set with
  // an owner of its own.
  papi::OpenRequest request;
  request.events = {"perf::CPU-CLOCK"};
  request.cpus = {0, 1};
  papi::init_library(PathsConfig{}.procfs);
  auto source = papi::open_papi_source(request);
  const auto& layout = source->layout();
  REQUIRE(layout.dropped.empty());
  REQUIRE(layout.event_sets.size() == request.cpus.size());
  std::size_t restarted = 0;  // the set on CPU 0, and its one counter
  for (std::size_t s = 0; s < layout.event_sets.size(); ++s) {
    if (layout.event_sets[s].cpu == 0) restarted = s;
  }
  const std::size_t on_cpu0 = layout.event_sets[restarted].counters.at(0);
  const std::size_t on_cpu1 = layout.event_sets[1 - restarted].counters.at(0);

  std::vector<std::string> failures(layout.event_sets.size());
  const auto read = [&] {
    std::vector<std::int64_t> values(layout.counters.size());
    source->read(values, failures);
    for (const auto& failure : failures) CHECK(failure.empty());
    return values;
  };
  const auto pause = std::chrono::milliseconds(300);
  const double pause_ns = std::chrono::duration<double, std::nano>(pause).count();
  read();
  std::this_thread::sleep_for(pause);
  const auto before = read();
  REQUIRE(static_cast<double>(before[on_cpu0]) >= 0.98 * pause_ns);  // counting since open

  const auto t0 = Clock::now();
  CHECK(source->rebuild(restarted).empty());
  const auto zeroed = read();
  const auto t1 = Clock::now();
  std::this_thread::sleep_for(pause);
  const auto t2 = Clock::now();
  const auto later = read();
  const auto t3 = Clock::now();
  const double shortest = std::chrono::duration<double, std::nano>(t2 - t1).count();
  const double longest = std::chrono::duration<double, std::nano>(t3 - t0).count();
  CAPTURE(before[on_cpu0], zeroed[on_cpu0], later[on_cpu0], shortest, longest);
  // Counting from zero again: what the set held is gone, and it advances with wall time.
  CHECK(static_cast<double>(zeroed[on_cpu0]) < 0.5 * pause_ns);
  const auto advanced = static_cast<double>(later[on_cpu0] - zeroed[on_cpu0]);
  CHECK(advanced >= 0.98 * shortest);
  CHECK(static_cast<double>(later[on_cpu0]) <= 1.02 * longest);
  // The other CPU's set was not touched.
  CHECK(zeroed[on_cpu1] >= before[on_cpu1]);
  CHECK(later[on_cpu1] - before[on_cpu1] >= static_cast<std::int64_t>(0.98 * shortest));
}

TEST_CASE("PAPI's overflow signal is blocked from library start, in every thread made after",
          "[papi][live]") {
  if (!papi::Library::existing()) {  // a test run before in this process may have started it
    sigset_t before;
    pthread_sigmask(SIG_SETMASK, nullptr, &before);
    REQUIRE_FALSE(sigismember(&before, papi::overflow_signal()));
  }
  REQUIRE(papi::Library::instance("/proc") != nullptr);
  sigset_t now;
  pthread_sigmask(SIG_SETMASK, nullptr, &now);
  CHECK(sigismember(&now, papi::overflow_signal()) == 1);
  int in_thread = -1;
  std::thread([&in_thread] {
    sigset_t mask;
    pthread_sigmask(SIG_SETMASK, nullptr, &mask);
    in_thread = sigismember(&mask, papi::overflow_signal());
  }).join();
  CHECK(in_thread == 1);
}
