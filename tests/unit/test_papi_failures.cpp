// The PAPI collector when things go wrong, driven by the fake counter source (papi_fakes.h):
// overlapping scrapes, event sets that fail to read and are rebuilt, multiplexed counts near
// overflow, negative readings, a metric name clashing with the topology's, a failing reset.
#include <algorithm>
#include <atomic>
#include <chrono>
#include "tests/catch.hpp"
#include <map>
#include <mutex>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "collectors/collector_set.h"
#include "common/cpu_list.h"
#include "collectors/metrics.h"
#include "collectors/papi/papi_collector.h"
#include "collectors/topology/topology_collector.h"
#include "config/errors.h"
#include "exporter/exposition.h"
#include "tests/support/support.h"
#include "tests/support/papi_fakes.h"
#include "topology/topology.h"

using namespace hwperf;
using namespace hwperf::test::papi_fakes;

namespace {

// One multiplexed set counting cycles on CPU 0, each read 2^39 more: the raw count passes the
// 2^40 reset threshold on the third scrape.
struct MultiplexedCycles {
  FakeCounterSource* fake = nullptr;
  std::unique_ptr<Collector> collector;

  MultiplexedCycles(const Topology& topology, bool reset_fails) {
    auto layout = papi::every_event_on_every_cpu(1, {0});
    layout.event_sets.front().multiplexed = true;
    auto source = std::make_unique<FakeCounterSource>(layout);
    fake = source.get();
    fake->step_ = std::uint64_t{1} << 39;
    fake->reset_fails_ = reset_fails;
    collector = make_papi_collector_from_source(config_with(Granularity::cpu),
                                                {spec("PAPI_TOT_CYC", "cycles")}, topology,
                                                std::move(source));
  }

  // The CPU 0 cycles total after `scrapes` more scrapes.
  double total_after(int scrapes) {
    double total = 0;
    for (int i = 0; i < scrapes; ++i) {
      total = value_of(scrape(*collector), "hwperf_cpu_cycles_total", {{"cpu", "0"}});
    }
    return total;
  }
};

}  // namespace

TEST_CASE("overlapping scrapes are serialised: each reads once and sees a newer count",
          "[papi][concurrency]") {
  const Topology topology = two_socket_topology();
  auto source = std::make_unique<FakeCounterSource>(papi::every_event_on_every_cpu(1, {0}));
  auto* fake = source.get();
  fake->step_ = 1;  // every read counts one more, like a live counter
  auto collector = make_papi_collector_from_source(config_with(Granularity::cpu),
                                                   {spec("PAPI_TOT_INS", "instructions")}, topology,
                                                   std::move(source));
  constexpr int kThreads = 4, kScrapes = 200;
  std::atomic<int> not_newer{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      double previous = 0;
      for (int i = 0; i < kScrapes; ++i) {
        std::vector<prometheus::MetricFamily> families;
        collector->collect(families);
        const double value = families.at(0).metric.at(0).counter.value;
        if (!(value > previous)) ++not_newer;
        previous = value;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(not_newer == 0);
  CHECK(fake->reads_ == kThreads * kScrapes);
  // Unserialised reads would lose increments (and race); serialised ones lose none.
  CHECK(fake->values_[0] == static_cast<std::uint64_t>(kThreads * kScrapes));
}

TEST_CASE(
    "one event set failing to read leaves the others served, counts the failures per CPU "
    "and is rebuilt in the background within the back-off cap even after 1000 failures",
    "[papi]") {
  const Topology topology = two_socket_topology();
  auto source = std::make_unique<FakeCounterSource>(papi::every_event_on_every_cpu(1, {0, 1}));
  auto* fake = source.get();
  fake->step_ = 1000;
  // A clock the test moves: 1000 failed scrapes a minute apart are 16 hours of failure.
  std::atomic<std::int64_t> fake_ms{0};
  papi::Maintenance maintenance;
  maintenance.period = std::chrono::milliseconds(2);
  maintenance.max_backoff = std::chrono::milliseconds(60000);
  maintenance.now = [&fake_ms] {
    return std::chrono::steady_clock::time_point(std::chrono::milliseconds(fake_ms.load()));
  };
  auto collector = make_papi_collector_from_source(config_with(Granularity::cpu),
                                                   {spec("PAPI_TOT_INS", "instructions")}, topology,
                                                   std::move(source), maintenance);
  CollectorSet set;
  set.add(std::move(collector));
  const std::map<std::string, std::string> cpu0 = {{"cpu", "0"}}, cpu1 = {{"cpu", "1"}};
  const auto scrape_set = [&set] {
    return test::parse_exposition(serialize(set.collect(), ExpositionFormat::text_0_0_4));
  };
  const auto before = scrape_set();
  const double cpu0_before = value_of(before, "hwperf_cpu_instructions_total", cpu0);

  // CPU 0's set fails from now on, and rebuilding it fails too.
  fake->restart_fails_ = true;
  fake->set_failing({0});
  constexpr int kFailedScrapes = 1000;
  std::vector<Sample> during;
  for (int i = 0; i < kFailedScrapes; ++i) {
    during = scrape_set();
    fake_ms += 60000;
  }
  CHECK(value_of(during, "hwperf_scrape_collector_success", {{"collector", "papi"}}) == 1);
  CHECK(value_of(during, "hwperf_cpu_instructions_total", cpu0) == cpu0_before);
  CHECK(value_of(during, "hwperf_cpu_instructions_total", cpu1) >
        value_of(before, "hwperf_cpu_instructions_total", cpu1));
  CHECK(value_of(during, "hwperf_papi_read_errors_total", cpu0) == kFailedScrapes);
  CHECK(value_of(during, "hwperf_papi_read_errors_total", cpu1) == 0);
  // Tried in the background, without any scrape asking. The 1000 scrapes can finish before a
  // loaded machine schedules the maintenance thread at all, so it is given time (not timed).
  const auto tried_by = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (fake->restarts_ == 0 && std::chrono::steady_clock::now() < tried_by) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  CHECK(fake->restarts_ > 0);

  // The fault clears. Within one back-off cap the set is rebuilt, without a scrape: the
  // exported total goes on from where it stood, and the failures stop.
  fake->restart_fails_ = false;
  fake_ms += 60000;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (fake->any_failing() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  REQUIRE_FALSE(fake->any_failing());
  scrape_set();
  const auto after = scrape_set();
  CHECK(value_of(after, "hwperf_cpu_instructions_total", cpu0) > cpu0_before);
  CHECK(value_of(after, "hwperf_papi_read_errors_total", cpu0) == kFailedScrapes);
}

TEST_CASE(
    "multiplexed counts are zeroed before PAPI's scaling can overflow, negative readings "
    "are skipped, and the total stays exact",
    "[papi]") {
  const Topology topology = two_socket_topology();
  MultiplexedCycles cycles(topology, /*reset_fails=*/false);
  FakeCounterSource* fake = cycles.fake;
  auto& collector = cycles.collector;
  const std::map<std::string, std::string> cpu0 = {{"cpu", "0"}};
  constexpr int kScrapes = 12;
  double total = cycles.total_after(kScrapes);
  CHECK(fake->resets_ > 0);
  // Every count arrived although PAPI's own count was zeroed along the way.
  CHECK(total == static_cast<double>(fake->step_ * kScrapes));
  CHECK(fake->values_[0] - fake->base_[0] <= 2 * fake->step_);

  // A negative reading (the scaling overflowed) adds nothing, zeroes the set, and counting
  // goes on.
  fake->base_[0] = fake->values_[0] + fake->step_ + 5;  // the next reading is -5
  const int resets = fake->resets_;
  CHECK(value_of(scrape(*collector), "hwperf_cpu_cycles_total", cpu0) == total);
  CHECK(fake->resets_ == resets + 1);
  CHECK(value_of(scrape(*collector), "hwperf_cpu_cycles_total", cpu0) ==
        total + static_cast<double>(fake->step_));
}

TEST_CASE("every negative reading is logged, not only a counter's first", "[papi]") {
  const Topology topology = two_socket_topology();
  auto layout = papi::every_event_on_every_cpu(1, {0});
  layout.event_sets.front().multiplexed = true;
  auto source = std::make_unique<FakeCounterSource>(layout);
  auto* fake = source.get();
  fake->step_ = 1000;
  auto collector = make_papi_collector_from_source(
      config_with(Granularity::cpu), {spec("PAPI_TOT_CYC", "cycles")}, topology, std::move(source));
  const test::CapturedStderr log;
  // Two overflows of the same counter with good readings between them; each reading comes out
  // `below` under zero (read() adds one step before it subtracts the base).
  const std::int64_t first_below = 5;
  const std::int64_t second_below = 7;
  std::vector<std::string> expected;
  for (const std::int64_t below : {first_below, second_below}) {
    fake->base_[0] = fake->values_[0] + fake->step_ + static_cast<std::uint64_t>(below);
    scrape(*collector);
    expected.push_back("negative count (" + std::to_string(-below) + ") for PAPI_TOT_CYC");
    scrape(*collector);  // a good reading from the zeroed set
  }
  const std::string text = log.text();
  CAPTURE(text);
  std::size_t logged = 0;
  for (std::size_t at = text.find("negative count"); at != std::string::npos;
       at = text.find("negative count", at + 1)) {
    ++logged;
  }
  CHECK(logged == expected.size());
  for (const auto& line : expected) CHECK_THAT(text, Catch::Contains(line));
  CHECK(fake->resets_ == static_cast<int>(expected.size()));
}

TEST_CASE(
    "a metric name that would give a second topology family is a config error naming "
    "where it was set",
    "[papi]") {
  const Topology topology = two_socket_topology();
  std::vector<prometheus::MetricFamily> topology_families;
  collect_constant(*make_topology_collector(topology), topology_families);
  REQUIRE_FALSE(topology_families.empty());
  for (const auto& family : topology_families) {
    // hwperf_cpu_<metric>_total is typed as hwperf_cpu_<metric> in OpenMetrics.
    const std::string prefix = "hwperf_cpu_";
    REQUIRE(family.name.rfind(prefix, 0) == 0);
    CAPTURE(family.name);
    ExportedEvent clashing = spec("perf::PAGE-FAULTS", family.name.substr(prefix.size()));
    clashing.where = "/etc/hwperf.yml:9:11";
    const auto papi_at = [&](Granularity granularity) {
      return make_papi_collector_from_source(
          config_with(granularity), {clashing}, topology,
          std::make_unique<FakeCounterSource>(papi::every_event_on_every_cpu(1, topology.cpus())));
    };
    CollectorSet set;
    set.add(make_topology_collector(topology));
    std::vector<std::string> problems;
    try {
      set.add(papi_at(Granularity::cpu));
    } catch (const ConfigError& e) {
      problems = e.problems();
    }
    REQUIRE(problems.size() == 1);
    CHECK_THAT(problems.front(), Catch::StartsWith(clashing.where + ": ") &&
                                     Catch::Contains(family.name + "_total") &&
                                     Catch::Contains("metric:"));
    // At another level the name is free.
    CollectorSet per_package;
    per_package.add(make_topology_collector(topology));
    CHECK_NOTHROW(per_package.add(papi_at(Granularity::package)));
  }
}

TEST_CASE("a multiplexed set whose reset fails is not counted twice", "[papi]") {
  const Topology topology = two_socket_topology();
  MultiplexedCycles cycles(topology, /*reset_fails=*/true);
  FakeCounterSource* fake = cycles.fake;
  constexpr int kScrapes = 8;
  double total = cycles.total_after(kScrapes);
  CHECK(fake->resets_ > 0);  // it was asked to zero the set, and could not
  // The exported total is what was counted, not that plus what the failed resets pretended.
  CHECK(total == static_cast<double>(fake->step_ * kScrapes));
  // Once resets work again, counting stays exact across them.
  fake->reset_fails_ = false;
  total = cycles.total_after(kScrapes);
  CHECK(total == static_cast<double>(fake->step_ * 2 * kScrapes));
}
