// The PAPI collector driven by a fake counter source: families, labels, aggregation at every
// granularity, units, the monotonic guard, status metrics and a failing source. Expected values
// are computed here from what the fake source was given.
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
#include "tests/support.h"
#include "topology/topology.h"

using namespace hwperf;
using events::EventSpec;
using papi::CounterSource;
using papi::SourceLayout;
using test::find_samples;
using test::parse_exposition;
using test::Sample;
using test::scrape;
using test::two_socket_topology;
using test::value_of;

namespace {

EventSpec spec(const std::string& event, const std::string& metric,
               events::Unit unit = events::Unit::count) {
  EventSpec s;
  s.event = event;
  s.metric = metric;
  s.description = "Test event " + event;
  s.unit = unit;
  return s;
}

// Counts every (event, CPU) of the layout it is given; values are set by the test.
class FakeSource final : public CounterSource {
 public:
  explicit FakeSource(SourceLayout layout) : layout_(std::move(layout)) {
    values_.assign(layout_.counters.size(), 0);
    base_.assign(layout_.counters.size(), 0);
  }
  const SourceLayout& layout() const override { return layout_; }
  void read(std::vector<std::int64_t>& values, std::vector<std::string>& failures) override {
    if (fail_) throw std::runtime_error("fake source: read failed");
    std::lock_guard<std::mutex> lock(sets_mutex_);
    ++reads_;
    for (auto& value : values_) value += step_;
    for (std::size_t s = 0; s < layout_.event_sets.size(); ++s) {
      if (failing_sets_.count(s) != 0) {
        failures[s] = "PAPI_read failed: fake failure";
        continue;
      }
      failures[s].clear();
      for (std::size_t i : layout_.event_sets[s].counters) {
        values[i] = static_cast<std::int64_t>(values_[i] - base_[i]);
      }
    }
  }
  // What PAPI_reset does: the set's counts start again from zero.
  std::string reset(std::size_t set) override {
    ++resets_;
    if (reset_fails_) return "fake reset failure";
    for (std::size_t i : layout_.event_sets[set].counters) base_[i] = values_[i];
    return {};
  }
  // What rebuilding does: a set that failed reads again, from zero.
  std::string rebuild(std::size_t set) override {
    std::lock_guard<std::mutex> lock(sets_mutex_);
    ++restarts_;
    if (restart_fails_) return "fake rebuild failure";
    failing_sets_.erase(set);
    reset(set);
    return {};
  }
  // The maintenance thread rebuilds while the test changes what fails.
  void set_failing(std::set<std::size_t> sets) {
    std::lock_guard<std::mutex> lock(sets_mutex_);
    failing_sets_ = std::move(sets);
  }
  bool any_failing() {
    std::lock_guard<std::mutex> lock(sets_mutex_);
    return !failing_sets_.empty();
  }

  std::vector<std::uint64_t> values_;
  std::vector<std::uint64_t> base_;
  std::uint64_t step_ = 0;
  std::atomic<bool> fail_{false};
  std::atomic<int> reads_{0};
  std::set<std::size_t> failing_sets_;  // guarded by sets_mutex_ once a collector runs
  std::atomic<bool> restart_fails_{false};
  std::atomic<bool> reset_fails_{false};
  std::atomic<int> resets_{0};
  std::atomic<int> restarts_{0};

 private:
  std::mutex sets_mutex_;
  SourceLayout layout_;
};

PapiCollectorConfig config_with(Granularity granularity) {
  PapiCollectorConfig config;
  config.granularity = granularity;
  return config;
}

}  // namespace

TEST_CASE("per-CPU families carry cpu, core, package and numa_node", "[papi]") {
  const Topology topology = two_socket_topology();
  auto source = std::make_unique<FakeSource>(papi::every_event_on_every_cpu(2, topology.cpus()));
  auto* fake = source.get();
  // Distinct values per counter so that a label mix-up cannot go unnoticed.
  for (std::size_t i = 0; i < fake->values_.size(); ++i) fake->values_[i] = 1000 + 7 * i;
  auto collector = make_papi_collector_from_source(
      config_with(Granularity::cpu),
      {spec("PAPI_TOT_INS", "instructions"), spec("perf::PAGE-FAULTS", "page_faults")}, topology,
      std::move(source));
  CHECK(collector->name() == "papi");

  const auto samples = scrape(*collector);
  const auto& layout = fake->layout();
  const char* families[] = {"hwperf_cpu_instructions_total", "hwperf_cpu_page_faults_total"};
  for (std::size_t i = 0; i < layout.counters.size(); ++i) {
    const auto& counter = layout.counters[i];
    const HardwareThread* thread = topology.find(counter.cpu);
    REQUIRE(thread != nullptr);
    const auto found =
        find_samples(samples, families[counter.event], {{"cpu", std::to_string(thread->cpu)}});
    REQUIRE(found.size() == 1);
    CHECK(found[0].labels.at("core") == std::to_string(thread->core));
    CHECK(found[0].labels.at("package") == std::to_string(thread->package));
    CHECK(found[0].labels.at("numa_node") == std::to_string(thread->numa_node));
    CHECK(found[0].value == static_cast<double>(fake->values_[i]));
  }
  CHECK(find_samples(samples, "hwperf_cpu_instructions_total").size() == topology.cpus().size());
}

TEST_CASE("a machine without NUMA information gets an empty numa_node label", "[papi]") {
  const Topology topology({{0, 0, 0, -1}, {1, 1, 0, -1}}, {}, "test: no NUMA");
  auto collector = make_papi_collector_from_source(
      config_with(Granularity::cpu), {spec("PAPI_TOT_INS", "instructions")}, topology,
      std::make_unique<FakeSource>(papi::every_event_on_every_cpu(1, topology.cpus())));
  const auto samples = find_samples(scrape(*collector), "hwperf_cpu_instructions_total");
  REQUIRE(samples.size() == 2);
  for (const auto& sample : samples) {
    const auto it = sample.labels.find("numa_node");
    CHECK((it == sample.labels.end() || it->second.empty()));
  }
}

TEST_CASE("every granularity sums the right CPUs under the right labels", "[papi]") {
  const Topology topology = two_socket_topology();
  const auto granularity =
      GENERATE(Granularity::cpu, Granularity::core, Granularity::package, Granularity::machine);
  CAPTURE(to_string(granularity));
  auto source = std::make_unique<FakeSource>(papi::every_event_on_every_cpu(1, topology.cpus()));
  auto* fake = source.get();
  for (std::size_t i = 0; i < fake->values_.size(); ++i) fake->values_[i] = (i + 1) * 1000003;
  auto collector = make_papi_collector_from_source(
      config_with(granularity), {spec("PAPI_TOT_CYC", "cycles")}, topology, std::move(source));

  // The expected series, worked out from the topology directly.
  std::map<std::map<std::string, std::string>, double> expected;
  for (std::size_t i = 0; i < fake->layout().counters.size(); ++i) {
    const HardwareThread& t = *topology.find(fake->layout().counters[i].cpu);
    std::map<std::string, std::string> labels;
    switch (granularity) {
      case Granularity::cpu:
        labels = {{"cpu", std::to_string(t.cpu)},
                  {"core", std::to_string(t.core)},
                  {"package", std::to_string(t.package)},
                  {"numa_node", std::to_string(t.numa_node)}};
        break;
      case Granularity::core:
        labels = {{"core", std::to_string(t.core)}, {"package", std::to_string(t.package)}};
        break;
      case Granularity::package: labels = {{"package", std::to_string(t.package)}}; break;
      case Granularity::machine: break;
    }
    expected[labels] += static_cast<double>(fake->values_[i]);
  }

  const std::string family = std::string("hwperf_") + to_string(granularity) + "_cycles_total";
  const auto samples = find_samples(scrape(*collector), family);
  REQUIRE(samples.size() == expected.size());
  for (const auto& sample : samples) {
    const auto it = expected.find(sample.labels);
    REQUIRE(it != expected.end());
    CHECK(sample.value == it->second);
  }
}

TEST_CASE("clock events are exported in seconds", "[papi]") {
  const Topology topology = two_socket_topology();
  auto source = std::make_unique<FakeSource>(papi::every_event_on_every_cpu(1, {0, 1}));
  auto* fake = source.get();
  fake->values_ = {1500000000ull, 2000000000000000007ull};  // 1.5 s; ~23 days and 7 ns
  auto collector = make_papi_collector_from_source(
      config_with(Granularity::cpu),
      {spec("perf::CPU-CLOCK", "clock_seconds", events::Unit::nanoseconds)}, topology,
      std::move(source));
  const auto samples = scrape(*collector);
  CHECK(value_of(samples, "hwperf_cpu_clock_seconds_total", {{"cpu", "0"}}) ==
        Approx(static_cast<double>(fake->values_[0]) / 1e9));
  CHECK(value_of(samples, "hwperf_cpu_clock_seconds_total", {{"cpu", "1"}}) ==
        Approx(static_cast<double>(fake->values_[1]) / 1e9));
}

TEST_CASE("an exported counter never decreases, even when a scaled count does", "[papi]") {
  const Topology topology = two_socket_topology();
  auto source = std::make_unique<FakeSource>(papi::every_event_on_every_cpu(1, {0}));
  auto* fake = source.get();
  auto collector = make_papi_collector_from_source(config_with(Granularity::cpu),
                                                   {spec("PAPI_TOT_INS", "instructions")}, topology,
                                                   std::move(source));
  const std::map<std::string, std::string> cpu0 = {{"cpu", "0"}};
  const std::uint64_t first = 5000000, lower = 4999000, higher = 5100000;

  fake->values_ = {first};
  CHECK(value_of(scrape(*collector), "hwperf_cpu_instructions_total", cpu0) == first);
  fake->values_ = {lower};  // multiplex scaling can estimate below the last estimate
  CHECK(value_of(scrape(*collector), "hwperf_cpu_instructions_total", cpu0) == first);
  fake->values_ = {higher};
  CHECK(value_of(scrape(*collector), "hwperf_cpu_instructions_total", cpu0) == higher);
}

TEST_CASE("dropped counters are reported, and the rest keeps counting", "[papi]") {
  const Topology topology = two_socket_topology();
  SourceLayout layout;
  // Event 0 counts on CPUs 0 and 1; event 1 only on CPU 0; event 2 nowhere.
  layout.counters = {{0, 0}, {0, 1}, {1, 0}};
  layout.dropped = {{1, 1, "Event does not exist", "no PMU"},
                    {2, 0, "Permission level does not permit operation", "sysctl"},
                    {2, 1, "Permission level does not permit operation", "sysctl"}};
  layout.event_sets = {{0, 0, "cpu_attach", true, {0, 2}}, {1, 0, "qualifier", false, {1}}};
  auto source = std::make_unique<FakeSource>(layout);
  source->values_ = {10, 20, 30};
  auto collector = make_papi_collector_from_source(
      config_with(Granularity::cpu),
      {spec("perf::CPU-CLOCK", "clock"), spec("PAPI_TOT_INS", "instructions"),
       spec("PAPI_TOT_CYC", "cycles")},
      topology, std::move(source));
  const auto samples = scrape(*collector);

  CHECK(find_samples(samples, "hwperf_cpu_clock_total").size() == 2);
  const auto instructions = find_samples(samples, "hwperf_cpu_instructions_total");
  REQUIRE(instructions.size() == 1);
  CHECK(instructions[0].labels.at("cpu") == "0");
  CHECK(find_samples(samples, "hwperf_cpu_cycles_total").empty());

  // One series per event and reason, whatever the number of CPUs: cpus lists them.
  std::map<std::pair<std::string, std::string>, std::vector<unsigned>> expected;
  for (const auto& drop : layout.dropped) {
    const std::string event = drop.event == 1 ? "PAPI_TOT_INS" : "PAPI_TOT_CYC";
    expected[{event, drop.reason}].push_back(drop.cpu);
  }
  const auto dropped = find_samples(samples, "hwperf_papi_event_dropped");
  REQUIRE(dropped.size() == expected.size());
  for (auto& [key, cpus] : expected) {
    std::sort(cpus.begin(), cpus.end());
    CHECK(
        value_of(samples, "hwperf_papi_event_dropped",
                 {{"event", key.first}, {"reason", key.second}, {"cpus", format_cpu_list(cpus)}}) ==
        static_cast<double>(cpus.size()));
  }
  for (const auto& set : layout.event_sets) {
    const std::map<std::string, std::string> labels = {{"cpu", std::to_string(set.cpu)},
                                                       {"event_set", std::to_string(set.index)}};
    CHECK(value_of(samples, "hwperf_papi_event_set_multiplexed", labels) ==
          (set.multiplexed ? 1.0 : 0.0));
    auto with_binding = labels;
    with_binding["binding"] = set.binding;
    CHECK(value_of(samples, "hwperf_papi_event_set_events", with_binding) ==
          static_cast<double>(set.counters.size()));
  }
}

TEST_CASE("HELP names the PAPI event, the domain and the level", "[papi]") {
  const Topology topology = two_socket_topology();
  auto config = config_with(Granularity::package);
  config.domain = CountingDomain::user;
  auto collector = make_papi_collector_from_source(
      config, {spec("PAPI_L1_DCM", "l1_data_cache_misses")}, topology,
      std::make_unique<FakeSource>(papi::every_event_on_every_cpu(1, {0, 4})));
  std::vector<prometheus::MetricFamily> families;
  collector->collect(families);
  const auto it = std::find_if(families.begin(), families.end(), [](const auto& family) {
    return family.name == "hwperf_package_l1_data_cache_misses_total";
  });
  REQUIRE(it != families.end());
  CHECK(it->type == prometheus::MetricType::Counter);
  CHECK_THAT(it->help, Catch::Contains("Test event PAPI_L1_DCM") &&
                           Catch::Contains("PAPI event PAPI_L1_DCM") &&
                           Catch::Contains("user mode only") && Catch::Contains("package"));
}

TEST_CASE("HELP states the event's own u/k domain, not the configured one", "[papi]") {
  const Topology topology = two_socket_topology();
  const auto [configured, event, domain] =
      GENERATE(table<CountingDomain, std::string, std::string>({
          {CountingDomain::all, "perf::CYCLES:u", "user mode only"},
          {CountingDomain::user, "perf::CYCLES:k=1", "kernel mode only"},
          {CountingDomain::kernel, "perf::CYCLES:u=1:k=1", "user and kernel mode"},
      }));
  auto config = config_with(Granularity::cpu);
  config.domain = configured;
  auto collector = make_papi_collector_from_source(
      config, {spec(event, "cycles"), spec("perf::CPU-CYCLES", "cpu_cycles")}, topology,
      std::make_unique<FakeSource>(papi::every_event_on_every_cpu(2, {0})));
  std::vector<prometheus::MetricFamily> families;
  collector->collect(families);
  auto help_of = [&](const std::string& name) {
    const auto it = std::find_if(families.begin(), families.end(),
                                 [&](const auto& family) { return family.name == name; });
    return it == families.end() ? std::string() : it->help;
  };
  CAPTURE(event);
  CHECK_THAT(help_of("hwperf_cpu_cycles_total"),
             Catch::Contains("PAPI event " + event + ", counted system-wide (every process) in " +
                             domain + " (set by the event's own u/k qualifiers), per CPU"));
  // An event without u/k qualifiers is counted in the configured domain.
  const std::string configured_text = configured == CountingDomain::all    ? "user and kernel mode"
                                      : configured == CountingDomain::user ? "user mode only"
                                                                           : "kernel mode only";
  CHECK_THAT(
      help_of("hwperf_cpu_cpu_cycles_total"),
      Catch::Contains("in " + configured_text + ", per CPU") && !Catch::Contains("qualifiers"));
}

TEST_CASE("a failing source fails the scrape, not the exporter", "[papi]") {
  const Topology topology = two_socket_topology();
  auto source = std::make_unique<FakeSource>(papi::every_event_on_every_cpu(1, {0, 1}));
  auto* fake = source.get();
  fake->values_ = {123, 456};
  CollectorSet set;
  set.add(make_papi_collector_from_source(config_with(Granularity::cpu),
                                          {spec("PAPI_TOT_INS", "instructions")}, topology,
                                          std::move(source)));

  fake->fail_ = true;
  auto samples = parse_exposition(serialize(set.collect(), ExpositionFormat::text_0_0_4));
  CHECK(value_of(samples, "hwperf_scrape_collector_success", {{"collector", "papi"}}) == 0.0);
  CHECK(find_samples(samples, "hwperf_cpu_instructions_total").empty());

  fake->fail_ = false;  // the next scrape is served as if nothing happened
  samples = parse_exposition(serialize(set.collect(), ExpositionFormat::text_0_0_4));
  CHECK(value_of(samples, "hwperf_scrape_collector_success", {{"collector", "papi"}}) == 1.0);
  CHECK(value_of(samples, "hwperf_cpu_instructions_total", {{"cpu", "1"}}) ==
        static_cast<double>(fake->values_[1]));
}

TEST_CASE("names that clash or are invalid are configuration errors", "[papi]") {
  const Topology topology = two_socket_topology();
  CHECK_THROWS_AS(
      make_papi_collector_from_source(
          config_with(Granularity::cpu),
          {spec("PAPI_TOT_INS", "instructions"), spec("perf::INSTRUCTIONS", "instructions")},
          topology, std::make_unique<FakeSource>(papi::every_event_on_every_cpu(2, {0}))),
      ConfigError);
  CHECK_THROWS_AS(make_papi_collector_from_source(
                      config_with(Granularity::cpu), {spec("PAPI_TOT_INS", "bad-name")}, topology,
                      std::make_unique<FakeSource>(papi::every_event_on_every_cpu(1, {0}))),
                  ConfigError);
}

TEST_CASE("overlapping scrapes are serialised: each reads once and sees a newer count",
          "[papi][concurrency]") {
  const Topology topology = two_socket_topology();
  auto source = std::make_unique<FakeSource>(papi::every_event_on_every_cpu(1, {0}));
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
  auto source = std::make_unique<FakeSource>(papi::every_event_on_every_cpu(1, {0, 1}));
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
  auto layout = papi::every_event_on_every_cpu(1, {0});
  layout.event_sets.front().multiplexed = true;
  auto source = std::make_unique<FakeSource>(layout);
  auto* fake = source.get();
  // Each scrape adds 2^39: the raw count passes 2^40 on the third scrape.
  fake->step_ = std::uint64_t{1} << 39;
  auto collector = make_papi_collector_from_source(
      config_with(Granularity::cpu), {spec("PAPI_TOT_CYC", "cycles")}, topology, std::move(source));
  const std::map<std::string, std::string> cpu0 = {{"cpu", "0"}};
  constexpr int kScrapes = 12;
  double total = 0;
  for (int i = 0; i < kScrapes; ++i)
    total = value_of(scrape(*collector), "hwperf_cpu_cycles_total", cpu0);
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
  auto source = std::make_unique<FakeSource>(layout);
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
  make_topology_collector(topology)->collect_constant(topology_families);
  REQUIRE_FALSE(topology_families.empty());
  for (const auto& family : topology_families) {
    // hwperf_cpu_<metric>_total is typed as hwperf_cpu_<metric> in OpenMetrics.
    const std::string prefix = "hwperf_cpu_";
    REQUIRE(family.name.rfind(prefix, 0) == 0);
    CAPTURE(family.name);
    EventSpec clashing = spec("perf::PAGE-FAULTS", family.name.substr(prefix.size()));
    clashing.where = "/etc/hwperf.yml:9:11";
    const auto papi_at = [&](Granularity granularity) {
      return make_papi_collector_from_source(
          config_with(granularity), {clashing}, topology,
          std::make_unique<FakeSource>(papi::every_event_on_every_cpu(1, topology.cpus())));
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
  auto layout = papi::every_event_on_every_cpu(1, {0});
  layout.event_sets.front().multiplexed = true;
  auto source = std::make_unique<FakeSource>(layout);
  auto* fake = source.get();
  fake->step_ = std::uint64_t{1} << 39;  // past the 2^40 reset threshold on the third scrape
  fake->reset_fails_ = true;
  auto collector = make_papi_collector_from_source(
      config_with(Granularity::cpu), {spec("PAPI_TOT_CYC", "cycles")}, topology, std::move(source));
  const std::map<std::string, std::string> cpu0 = {{"cpu", "0"}};
  constexpr int kScrapes = 8;
  double total = 0;
  for (int i = 0; i < kScrapes; ++i)
    total = value_of(scrape(*collector), "hwperf_cpu_cycles_total", cpu0);
  CHECK(fake->resets_ > 0);  // it was asked to zero the set, and could not
  // The exported total is what was counted, not that plus what the failed resets pretended.
  CHECK(total == static_cast<double>(fake->step_ * kScrapes));
  // Once resets work again, counting stays exact across them.
  fake->reset_fails_ = false;
  for (int i = 0; i < kScrapes; ++i)
    total = value_of(scrape(*collector), "hwperf_cpu_cycles_total", cpu0);
  CHECK(total == static_cast<double>(fake->step_ * 2 * kScrapes));
}
