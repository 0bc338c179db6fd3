// The collector over a fake energy source: what it exports (families, labels, joules computed
// here from the raw values written), the wrap guard folding several wraps between two scrapes,
// the power ceilings and guard period, interface selection and configuration errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "collectors/rapl/powercap_source.h"
#include "collectors/rapl/rapl_collector.h"
#include "collectors/rapl/rapl_factory.h"
#include "config/errors.h"
#include "exporter/exposition.h"
#include "tests/support.h"
#include "tests/unit/test_rapl_fixtures.h"

using namespace hwperf;
using namespace hwperf::rapl;
using hwperf::test::find_samples;
using hwperf::test::parse_exposition;
using hwperf::test::Sample;
using hwperf::test::TempDir;
using hwperf::test::scrape;
using hwperf::test::value_of;

namespace {

constexpr std::uint64_t kTwoTo32 = 0x100000000ull;

// Raw values the test sets and the source returns; shared so the test keeps a handle on it after
// the engine owns the source.
struct FakeState {
  std::mutex mutex;
  std::vector<std::uint64_t> values;
  std::vector<int> errors;
  std::atomic<std::uint64_t> reads{0};

  void set(std::size_t i, std::uint64_t value) {
    const std::lock_guard<std::mutex> lock(mutex);
    values.at(i) = value;
    errors.at(i) = 0;
  }
  void fail(std::size_t i, int error) {
    const std::lock_guard<std::mutex> lock(mutex);
    errors.at(i) = error;
  }
};

class FakeSource final : public EnergySource {
 public:
  FakeSource(std::vector<CounterInfo> counters, std::shared_ptr<FakeState> state,
             std::map<unsigned, double> hints = {})
      : counters_(std::move(counters)), state_(std::move(state)), hints_(std::move(hints)) {
    const std::lock_guard<std::mutex> lock(state_->mutex);
    state_->values.resize(counters_.size(), 0);
    state_->errors.resize(counters_.size(), 0);
  }
  RaplInterface interface() const override { return RaplInterface::msr; }
  const std::vector<CounterInfo>& counters() const override { return counters_; }
  OrErrno<std::uint64_t> read(std::size_t index) override {
    const std::lock_guard<std::mutex> lock(state_->mutex);
    ++state_->reads;
    if (state_->errors.at(index) != 0) return {0, state_->errors.at(index)};
    return {state_->values.at(index), 0};
  }
  std::map<unsigned, double> package_power_hints() const override { return hints_; }

 private:
  std::vector<CounterInfo> counters_;
  std::shared_ptr<FakeState> state_;
  std::map<unsigned, double> hints_;
};

CounterInfo msr_counter(Domain domain, std::optional<unsigned> package, unsigned esu,
                        std::optional<unsigned> die = std::nullopt) {
  CounterInfo info;
  info.domain = domain;
  info.package = package;
  info.die = die;
  info.scale = {WrapRule::modulo_2_32, 0, std::uint64_t{1} << esu};
  info.source = "fake " + std::string(to_string(domain));
  return info;
}

ProbeResult fake_probe(std::vector<CounterInfo> counters, std::shared_ptr<FakeState> state,
                       std::map<unsigned, double> hints = {}) {
  ProbeResult probe;
  probe.interface = RaplInterface::msr;
  probe.source = std::make_unique<FakeSource>(std::move(counters), std::move(state), std::move(hints));
  return probe;
}

ProbeResult failed_probe(RaplInterface interface, const std::string& reason) {
  ProbeResult probe;
  probe.interface = interface;
  probe.reason = reason;
  probe.message = "rapl: " + std::string(to_string(interface)) + ": test failure";
  return probe;
}


// A clock the test moves by hand, for the plausibility check.
struct ManualClock {
  std::shared_ptr<std::atomic<std::int64_t>> ms =
      std::make_shared<std::atomic<std::int64_t>>(3600 * 1000);
  RaplEngine::NowFn fn() const {
    auto shared = ms;
    return [shared] { return Clock::time_point{} + std::chrono::milliseconds(shared->load()); };
  }
  void advance(std::chrono::milliseconds by) const { *ms += by.count(); }
};

Topology two_packages() { return hwperf::test::rapl_fixture::two_package_topology(); }

}  // namespace

TEST_CASE("the collector exports joules per domain with package, die and psys labels",
          "[rapl]") {
  auto state = std::make_shared<FakeState>();
  const unsigned esu = 14;
  const unsigned dram_esu = 16;
  std::vector<CounterInfo> counters = {
      msr_counter(Domain::package, 0u, esu),     msr_counter(Domain::package, 1u, esu),
      msr_counter(Domain::core, 0u, esu),        msr_counter(Domain::dram, 1u, dram_esu, 1u),
      msr_counter(Domain::psys, std::nullopt, esu)};
  const std::vector<std::uint64_t> start = {1000, kTwoTo32 - 5, 42, 7, 900};
  const std::vector<std::uint64_t> step = {16384 * 3 + 5, 10, 0, 65536, 1};
  for (std::size_t i = 0; i < start.size(); ++i) state->values.push_back(start[i]);
  state->errors.resize(start.size(), 0);
  ManualClock clock;
  std::vector<ProbeResult> probes;
  probes.push_back(failed_probe(RaplInterface::perf, "unsupported"));
  probes.push_back(fake_probe(counters, state));
  RaplCollectorConfig config;
  config.wrap_guard_interval_seconds = 3600;  // out of the way: this test drives the reads
  auto collector = build_rapl_collector(std::move(probes), config, two_packages(), clock.fn());
  REQUIRE(collector->name() == "rapl");

  for (std::size_t i = 0; i < start.size(); ++i) state->set(i, (start[i] + step[i]) % kTwoTo32);
  clock.advance(std::chrono::seconds(1));
  const auto samples = scrape(*collector);

  auto joules = [&](std::size_t i) {
    return static_cast<double>(step[i]) /
           static_cast<double>(counters[i].scale.counts_per_joule);
  };
  CHECK(value_of(samples, "hwperf_rapl_energy_available") == 1);
  CHECK(value_of(samples, "hwperf_rapl_interface_info", {{"interface", "msr"}}) == 1);
  CHECK(value_of(samples, "hwperf_rapl_interface_probe_success",
                 {{"interface", "perf"}, {"reason", "unsupported"}}) == 0);
  CHECK(value_of(samples, "hwperf_rapl_interface_probe_success",
                 {{"interface", "msr"}, {"reason", "ok"}}) == 1);
  CHECK(value_of(samples, "hwperf_rapl_package_joules_total", {{"package", "0"}}) == joules(0));
  CHECK(value_of(samples, "hwperf_rapl_package_joules_total", {{"package", "1"}}) == joules(1));
  CHECK(value_of(samples, "hwperf_rapl_core_joules_total", {{"package", "0"}}) == joules(2));
  CHECK(value_of(samples, "hwperf_rapl_dram_joules_total", {{"package", "1"}, {"die", "1"}}) ==
        joules(3));
  const auto psys = find_samples(samples, "hwperf_rapl_psys_joules_total");
  REQUIRE(psys.size() == 1);
  CHECK(psys.front().labels.empty());
  CHECK(psys.front().value == joules(4));
  CHECK(find_samples(samples, "hwperf_rapl_uncore_joules_total").empty());

  CHECK(value_of(samples, "hwperf_rapl_wraps_total", {{"domain", "package"}, {"package", "1"}}) == 1);
  CHECK(value_of(samples, "hwperf_rapl_wraps_total", {{"domain", "package"}, {"package", "0"}}) == 0);
  CHECK(value_of(samples, "hwperf_rapl_rejected_deltas_total",
                 {{"domain", "dram"}, {"package", "1"}, {"die", "1"}}) == 0);
  CHECK(value_of(samples, "hwperf_rapl_read_errors_total", {{"domain", "psys"}}) == 0);
  CHECK(value_of(samples, "hwperf_rapl_wrap_guard_interval_seconds") ==
        config.wrap_guard_interval_seconds);
  CHECK(value_of(samples, "hwperf_rapl_power_ceiling_watts", {{"package", "0"}}) ==
        kDefaultPackageWatts);
}

TEST_CASE("an implausible jump is rejected and counted; read errors are counted and recovered",
          "[rapl]") {
  auto state = std::make_shared<FakeState>();
  const unsigned esu = 14;
  const double watts = 50;
  const std::vector<CounterInfo> counters = {msr_counter(Domain::package, 0u, esu)};
  state->values = {5000};
  state->errors = {0};
  ManualClock clock;
  std::vector<ProbeResult> probes;
  probes.push_back(fake_probe(counters, state));
  RaplCollectorConfig config;
  config.max_power_watts = watts;
  config.wrap_guard_interval_seconds = 3600;
  auto collector = build_rapl_collector(std::move(probes), config, two_packages(), clock.fn());
  const std::uint64_t per_joule = std::uint64_t{1} << esu;
  const std::map<std::string, std::string> pkg0 = {{"package", "0"}};
  const std::map<std::string, std::string> pkg0_domain = {{"domain", "package"}, {"package", "0"}};

  // Two seconds at most `watts`, plus the slack: anything above is not energy.
  clock.advance(std::chrono::seconds(2));
  const std::uint64_t jump = plausible_limit_counts(watts, 2.0, per_joule) + 1;
  state->set(0, 5000 + jump);
  auto samples = scrape(*collector);
  CHECK(value_of(samples, "hwperf_rapl_package_joules_total", pkg0) == 0);
  CHECK(value_of(samples, "hwperf_rapl_rejected_deltas_total", pkg0_domain) == 1);
  CHECK(value_of(samples, "hwperf_rapl_power_ceiling_watts", pkg0) == watts);

  // A failed read keeps the last good baseline; the next good read brings the whole delta.
  const std::uint64_t first = 1000;
  const std::uint64_t second = 2500;
  state->fail(0, EIO);
  clock.advance(std::chrono::seconds(1));
  samples = scrape(*collector);
  CHECK(value_of(samples, "hwperf_rapl_read_errors_total", pkg0_domain) == 1);
  CHECK(value_of(samples, "hwperf_rapl_package_joules_total", pkg0) == 0);
  state->set(0, 5000 + jump + first + second);
  clock.advance(std::chrono::seconds(1));
  samples = scrape(*collector);
  CHECK(value_of(samples, "hwperf_rapl_package_joules_total", pkg0) ==
        static_cast<double>(first + second) / static_cast<double>(per_joule));
  CHECK(value_of(samples, "hwperf_rapl_rejected_deltas_total", pkg0_domain) == 1);
  CHECK(value_of(samples, "hwperf_rapl_read_errors_total", pkg0_domain) == 1);
}

TEST_CASE("a counter that never moves is reported frozen, not as energy, until it moves",
          "[rapl]") {
  // A hypervisor that exposes perf's energy-psys but returns 0 for ever, beside a package counter
  // that measures.
  auto state = std::make_shared<FakeState>();
  const unsigned esu = 14;
  const std::vector<CounterInfo> counters = {msr_counter(Domain::package, 0u, esu),
                                             msr_counter(Domain::psys, std::nullopt, esu)};
  const std::uint64_t package_start = 777;
  state->values = {package_start, 0};
  state->errors = {0, 0};
  ManualClock clock;
  std::vector<ProbeResult> probes;
  probes.push_back(fake_probe(counters, state));
  RaplCollectorConfig config;
  config.wrap_guard_interval_seconds = 3600;
  auto collector = build_rapl_collector(std::move(probes), config, two_packages(), clock.fn());
  const std::map<std::string, std::string> psys = {{"domain", "psys"}};
  const std::map<std::string, std::string> package = {{"domain", "package"}, {"package", "0"}};
  const double per_joule = static_cast<double>(std::uint64_t{1} << esu);
  std::uint64_t package_counts = 0;
  auto step_package = [&](std::uint64_t counts) {
    package_counts += counts;
    state->set(0, package_start + package_counts);
  };

  // Before the threshold a still counter is just a quiet one.
  const auto just_before = std::chrono::milliseconds(
      static_cast<std::int64_t>(kFrozenAfterSeconds * 1000) - 1);
  clock.advance(just_before);
  step_package(100);
  auto samples = scrape(*collector);
  CHECK(value_of(samples, "hwperf_rapl_energy_frozen", psys) == 0);
  CHECK(find_samples(samples, "hwperf_rapl_psys_joules_total").size() == 1);

  // From the threshold on it is frozen: no joules for it, the package is unaffected.
  clock.advance(std::chrono::milliseconds(1));
  step_package(200);
  samples = scrape(*collector);
  CHECK(value_of(samples, "hwperf_rapl_energy_frozen", psys) == 1);
  CHECK(find_samples(samples, "hwperf_rapl_psys_joules_total").empty());
  CHECK(value_of(samples, "hwperf_rapl_energy_frozen", package) == 0);
  CHECK(value_of(samples, "hwperf_rapl_package_joules_total", {{"package", "0"}}) ==
        static_cast<double>(package_counts) / per_joule);

  // Once it moves it is a measurement again, counted from startup as every counter is.
  const std::uint64_t psys_counts = 4096;
  clock.advance(std::chrono::seconds(1));
  state->set(1, psys_counts);
  samples = scrape(*collector);
  CHECK(value_of(samples, "hwperf_rapl_energy_frozen", psys) == 0);
  CHECK(value_of(samples, "hwperf_rapl_psys_joules_total") ==
        static_cast<double>(psys_counts) / per_joule);
}

TEST_CASE("without any interface the collector says energy is unavailable, and nothing else",
          "[rapl]") {
  std::vector<ProbeResult> probes;
  probes.push_back(failed_probe(RaplInterface::perf, "unsupported"));
  probes.push_back(failed_probe(RaplInterface::powercap, "absent"));
  probes.push_back(failed_probe(RaplInterface::msr, "absent"));
  auto collector = build_rapl_collector(std::move(probes), RaplCollectorConfig{}, two_packages());
  const auto samples = scrape(*collector);
  CHECK(value_of(samples, "hwperf_rapl_energy_available") == 0);
  CHECK(find_samples(samples, "hwperf_rapl_interface_probe_success").size() == 3);
  for (const auto& sample : samples) {
    CAPTURE(sample.name);
    CHECK((sample.name == "hwperf_rapl_energy_available" ||
           sample.name == "hwperf_rapl_interface_probe_success"));
  }
}

TEST_CASE("the wrap guard folds several wraps between two scrapes (engine, manual ticks)",
          "[rapl]") {
  auto state = std::make_shared<FakeState>();
  const unsigned esu = 14;
  const std::uint64_t per_joule = std::uint64_t{1} << esu;
  const std::vector<CounterInfo> counters = {msr_counter(Domain::package, 0u, esu)};
  const std::uint64_t start = 123456;
  state->values = {start};
  state->errors = {0};
  ManualClock clock;
  RaplEngine engine(std::make_unique<FakeSource>(counters, state), {1000.0}, clock.fn());
  const auto before = engine.snapshot();
  REQUIRE(before.size() == 1);

  // Five guard periods, each advancing 3/4 of the 32-bit range: the counter passes 2^32 three
  // times between the scrapes; a guard read in each period sees every delta below one turn.
  const std::uint64_t step = 3 * (kTwoTo32 / 4);
  const int periods = 5;
  std::uint64_t raw = start;
  for (int i = 0; i < periods; ++i) {
    raw += step;
    state->set(0, raw % kTwoTo32);
    // At 1000 W the step takes 196 s; a period that long keeps each delta plausible.
    clock.advance(std::chrono::seconds(200));
    engine.sample();  // what the guard thread does each period
  }
  const auto after = engine.snapshot();
  const std::uint64_t total = step * periods;
  CHECK(after.front().tally.energy.whole_joules() == total / per_joule);
  CHECK(after.front().tally.energy.remainder_counts() == total % per_joule);
  CHECK(after.front().tally.wraps == (start + total) / kTwoTo32);
  CHECK(after.front().tally.rejected == 0);
  // The scrapes alone would have seen one delta modulo 2^32 and lost whole turns.
  CHECK(msr_delta(start, raw % kTwoTo32).counts != total);
}

TEST_CASE("the wrap guard thread keeps up with a counter between slow scrapes", "[rapl]") {
  auto state = std::make_shared<FakeState>();
  const unsigned esu = 14;
  const std::uint64_t per_joule = std::uint64_t{1} << esu;
  const std::vector<CounterInfo> counters = {msr_counter(Domain::package, 0u, esu)};
  const std::uint64_t start = kTwoTo32 - 777;
  state->values = {start};
  state->errors = {0};
  std::vector<ProbeResult> probes;
  probes.push_back(fake_probe(counters, state));
  RaplCollectorConfig config;
  config.wrap_guard_interval_seconds = 0.005;
  // 3/4 of the range per step must be plausible over ~10 ms of real time.
  config.max_power_watts = 1e9;
  auto collector = build_rapl_collector(std::move(probes), config, two_packages());
  const auto samples_before = scrape(*collector);
  CHECK(value_of(samples_before, "hwperf_rapl_package_joules_total", {{"package", "0"}}) == 0);

  const std::uint64_t step = 3 * (kTwoTo32 / 4);
  const int steps = 8;
  std::uint64_t raw = start;
  for (int i = 0; i < steps; ++i) {
    raw += step;
    state->set(0, raw % kTwoTo32);
    // Wait for two guard reads after the change, so the next step cannot land before the guard
    // has seen this one (the second read starts after the change was made).
    const auto seen = state->reads.load();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (state->reads.load() < seen + 2 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    REQUIRE(state->reads.load() >= seen + 2);
  }
  const auto samples = scrape(*collector);
  const std::uint64_t total = step * steps;
  const double expected = static_cast<double>(total / per_joule) +
                          static_cast<double>(total % per_joule) / static_cast<double>(per_joule);
  CHECK(value_of(samples, "hwperf_rapl_package_joules_total", {{"package", "0"}}) == expected);
  CHECK(value_of(samples, "hwperf_rapl_wraps_total", {{"domain", "package"}, {"package", "0"}}) ==
        static_cast<double>((start + total) / kTwoTo32));
  CHECK(value_of(samples, "hwperf_rapl_rejected_deltas_total",
                 {{"domain", "package"}, {"package", "0"}}) == 0);
}

namespace {

// What the powercap source read and when, shared by the test and the source below: reads per
// counter, and one mutex that each read and each of the test's writes hold. sysfs makes every
// read of energy_uj a whole, fresh value; a regular file does not promise that against a
// concurrent pwrite, so the test orders the two (it tests the engine, not the page cache).
struct ReadLog {
  std::mutex io;
  std::vector<std::uint64_t> reads;  // under io
};

// The real powercap source, reading through its own descriptors, with every read logged.
class LoggedSource final : public EnergySource {
 public:
  LoggedSource(std::unique_ptr<EnergySource> inner, std::shared_ptr<ReadLog> log)
      : inner_(std::move(inner)), log_(std::move(log)) {
    log_->reads.assign(inner_->counters().size(), 0);
  }
  RaplInterface interface() const override { return inner_->interface(); }
  const std::vector<CounterInfo>& counters() const override { return inner_->counters(); }
  OrErrno<std::uint64_t> read(std::size_t index) override {
    const std::lock_guard<std::mutex> lock(log_->io);
    const auto value = inner_->read(index);
    ++log_->reads.at(index);
    return value;
  }
  std::map<unsigned, double> package_power_hints() const override {
    return inner_->package_power_hints();
  }

 private:
  std::unique_ptr<EnergySource> inner_;
  std::shared_ptr<ReadLog> log_;
};

// Every sample of one scrape, keyed by name and labels, from the families themselves (no text).
std::map<std::string, double> sample_values(Collector& collector) {
  std::vector<prometheus::MetricFamily> families;
  collector.collect(families);
  std::map<std::string, double> values;
  for (const auto& family : families) {
    for (const auto& metric : family.metric) {
      std::string key = family.name;
      for (const auto& label : metric.label) key += "," + label.name + "=" + label.value;
      values[key] = family.type == prometheus::MetricType::Counter ? metric.counter.value
                                                                   : metric.gauge.value;
    }
  }
  return values;
}

}  // namespace

TEST_CASE("concurrent scrapes while the wrap guard ticks: monotonic, and exact at the end",
          "[rapl]") {
  using namespace hwperf::test::rapl_fixture;
  // Ranges of a few joules, so that the zones wrap every few steps; one counter unit is 1 uJ.
  const std::uint64_t package_range = 5000000;
  const std::uint64_t dram_range = 3000000;
  struct Sim {
    Zone zone;
    std::string energy_key;  // the exported sample: family and labels
    std::string wraps_key;
    std::uint64_t value = 0;
    std::uint64_t truth_uj = 0;
    std::uint64_t wraps = 0;
  };
  std::vector<Sim> zones = {
      {{"intel-rapl:0", "package-0", package_range - 1000, package_range, 0},
       "hwperf_rapl_package_joules_total,package=0",
       "hwperf_rapl_wraps_total,domain=package,package=0"},
      {{"intel-rapl:0:0", "core", 0, package_range, 0},
       "hwperf_rapl_core_joules_total,package=0", "hwperf_rapl_wraps_total,domain=core,package=0"},
      {{"intel-rapl:0:1", "dram", dram_range, dram_range, 0},
       "hwperf_rapl_dram_joules_total,package=0", "hwperf_rapl_wraps_total,domain=dram,package=0"},
      {{"intel-rapl:1", "package-1", 123, package_range, 0},
       "hwperf_rapl_package_joules_total,package=1",
       "hwperf_rapl_wraps_total,domain=package,package=1"},
      {{"intel-rapl:2", "psys", 4000000, package_range, 0}, "hwperf_rapl_psys_joules_total",
       "hwperf_rapl_wraps_total,domain=psys"},
  };
  TempDir dir;
  std::vector<Zone> tree;
  for (auto& z : zones) {
    z.value = z.zone.energy_uj;
    tree.push_back(z.zone);
  }
  write_powercap_tree(dir, tree);

  auto probe = open_powercap_source((dir.path() / "sys").string(), two_packages(), DomainSet::all());
  REQUIRE(probe.source != nullptr);
  REQUIRE(probe.source->counters().size() == zones.size());
  auto log = std::make_shared<ReadLog>();
  probe.source = std::make_unique<LoggedSource>(std::move(probe.source), log);
  std::vector<ProbeResult> probes;
  probes.push_back(std::move(probe));
  RaplCollectorConfig config;
  // Steps are at most a quarter of the smallest range (0.75 J): plausible at 10 W within the 1 s
  // of slack. The guard ticks every millisecond, far more often than the derived period (75 ms).
  config.max_power_watts = 10;
  config.wrap_guard_interval_seconds = 0.001;
  auto collector = build_rapl_collector(std::move(probes), config, two_packages());
  const auto first = sample_values(*collector);
  for (const auto& z : zones) {
    CAPTURE(z.energy_key);
    REQUIRE(first.count(z.energy_key) == 1);
    CHECK(first.at(z.energy_key) == 0);
  }

  // Scrapers: collect() in a loop until the writer is done, each keeping what it saw. Catch2's
  // assertions are not thread-safe, so the threads only record; the checks come after join.
  struct Seen {
    std::size_t scrapes = 0;
    std::vector<std::string> problems;
  };
  const int scraper_count = 4;
  std::atomic<bool> done{false};
  std::vector<Seen> seen(scraper_count);
  std::vector<std::string> watched;  // the threads' own copy: the writer changes `zones`
  for (const auto& z : zones) {
    watched.push_back(z.energy_key);
    watched.push_back(z.wraps_key);
  }
  std::vector<std::thread> scrapers;
  // Stops and joins the scrapers however the writer below ends (a throw included).
  struct JoinAll {
    std::atomic<bool>& done;
    std::vector<std::thread>& threads;
    ~JoinAll() {
      done = true;
      for (auto& thread : threads) {
        if (thread.joinable()) thread.join();
      }
    }
  } join_all{done, scrapers};
  for (int t = 0; t < scraper_count; ++t) {
    scrapers.emplace_back([&, t] {
      Seen& mine = seen[static_cast<std::size_t>(t)];
      auto problem = [&mine](std::string text) {
        if (mine.problems.size() < 10) mine.problems.push_back(std::move(text));
      };
      std::map<std::string, double> last;
      try {
        while (!done.load()) {
          const auto values = sample_values(*collector);
          ++mine.scrapes;
          for (const std::string& key : watched) {
            const auto now = values.find(key);
            if (now == values.end()) {
              problem(key + " missing");
              continue;
            }
            const auto before = last.find(key);
            if (before != last.end() && now->second < before->second) {
              problem(key + " went from " + std::to_string(before->second) + " to " +
                      std::to_string(now->second));
            }
            last[key] = now->second;
          }
        }
      } catch (const std::exception& e) {
        problem(std::string("collect() threw: ") + e.what());
      }
    });
  }

  // The writer: every zone but one (equal readings) advances by up to a quarter range per step,
  // then waits until each counter has been read after the write (by the guard or a scrape), so
  // no wrap can pass unseen; which of them reads it first is up to the scheduler.
  const int steps = 300;
  std::uint64_t lcg = 0x9E3779B97F4A7C15ull;  // fixed seed: the run is reproducible
  auto next_step = [&lcg](std::uint64_t limit) {
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return (lcg >> 33) % (limit + 1);
  };
  bool writer_ok = true;
  for (int step = 0; step < steps && writer_ok; ++step) {
    std::vector<std::uint64_t> reads_before;
    {
      const std::lock_guard<std::mutex> lock(log->io);
      for (std::size_t z = 0; z < zones.size(); ++z) {
        Sim& sim = zones[z];
        const std::uint64_t energy = z == 1 ? 0 : next_step(dram_range / 4);
        sim.truth_uj += energy;
        sim.value += energy;
        while (sim.value > sim.zone.range_uj) {
          sim.value -= sim.zone.range_uj + 1;  // up to the range, then 0 one unit later
          ++sim.wraps;
        }
        set_energy(dir, sim.zone.dir, sim.value);
      }
      reads_before = log->reads;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (true) {
      {
        const std::lock_guard<std::mutex> lock(log->io);
        bool all_read = true;
        for (std::size_t i = 0; i < reads_before.size(); ++i) {
          all_read = all_read && log->reads[i] > reads_before[i];
        }
        if (all_read) break;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        writer_ok = false;
        break;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  done = true;
  for (auto& thread : scrapers) thread.join();
  REQUIRE(writer_ok);  // else a counter went unread for 10 s

  for (int t = 0; t < scraper_count; ++t) {
    CAPTURE(t, seen[static_cast<std::size_t>(t)].problems);
    CHECK(seen[static_cast<std::size_t>(t)].problems.empty());
    CHECK(seen[static_cast<std::size_t>(t)].scrapes >= 2);  // compared with itself at least once
  }
  const auto last = sample_values(*collector);
  for (const auto& z : zones) {
    CAPTURE(z.zone.dir, z.truth_uj, z.wraps);
    REQUIRE(last.count(z.energy_key) == 1);
    // Exact: microjoules kept as whole joules plus a remainder, a double only in the sample.
    CHECK(last.at(z.energy_key) == static_cast<double>(z.truth_uj / 1000000) +
                                       static_cast<double>(z.truth_uj % 1000000) / 1e6);
    CHECK(last.at(z.wraps_key) == static_cast<double>(z.wraps));
    // The run wrapped every moving zone many times (about 20 to 40 each).
    if (z.zone.name != "core") CHECK(z.wraps >= 10);
  }
  for (const auto& [key, value] : last) {
    if (key.rfind("hwperf_rapl_rejected_deltas_total", 0) == 0 ||
        key.rfind("hwperf_rapl_read_errors_total", 0) == 0) {
      CAPTURE(key);
      CHECK(value == 0);
    }
  }
}

TEST_CASE("the wrap guard stops at once when destroyed, not after its period", "[rapl]") {
  std::atomic<int> ticks{0};
  const auto start = std::chrono::steady_clock::now();
  {
    WrapGuard guard(std::chrono::hours(1), [&ticks] { ++ticks; });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  CHECK(took.count() < 1.0);
  CHECK(ticks.load() == 0);

  std::atomic<int> fast_ticks{0};
  {
    WrapGuard guard(std::chrono::milliseconds(2), [&fast_ticks] {
      if (++fast_ticks == 2) throw std::runtime_error("a tick may fail; the guard goes on");
    });
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (fast_ticks.load() < 5 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  CHECK(fast_ticks.load() >= 5);
}

TEST_CASE("power ceilings: configured, else 4x the hardware's figure, else the default",
          "[rapl]") {
  const std::vector<unsigned> packages = {0, 1};
  SECTION("configured wins") {
    const double configured = 300;
    const auto c = choose_power_ceilings(configured, {{0, 125}}, packages);
    CHECK(c.package_watts.at(0) == configured);
    CHECK(c.package_watts.at(1) == configured);
    CHECK(c.psys_watts == 2 * (configured + configured));
    CHECK(c.origin == "configured");
  }
  SECTION("hardware figures, per package; a package without one gets the default") {
    const double hint = 125;
    const auto c = choose_power_ceilings(0, {{0, hint}}, packages);
    CHECK(c.package_watts.at(0) == kHardwareHintFactor * hint);
    CHECK(c.package_watts.at(1) == kDefaultPackageWatts);
    CHECK(c.psys_watts == 2 * (kHardwareHintFactor * hint + kDefaultPackageWatts));
    CHECK(c.origin == "hardware and default");
  }
  SECTION("figures under 1 W are bogus") {
    const auto c = choose_power_ceilings(0, {{0, 0.5}, {1, 0}}, packages);
    CHECK(c.package_watts.at(0) == kDefaultPackageWatts);
    CHECK(c.origin == "default");
  }
  SECTION("psys and unknown packages") {
    const auto c = choose_power_ceilings(0, {{0, 100}, {1, 200}}, packages);
    CHECK(c.origin == "hardware");
    CHECK(counter_ceiling(msr_counter(Domain::psys, std::nullopt, 14), c) == c.psys_watts);
    CHECK(counter_ceiling(msr_counter(Domain::dram, 1u, 16), c) == kHardwareHintFactor * 200);
    CHECK(counter_ceiling(msr_counter(Domain::package, 7u, 14), c) ==
          std::max(kDefaultPackageWatts, kHardwareHintFactor * 200));
  }
}

TEST_CASE("the guard period is a quarter of the shortest wrap at the ceiling, clamped",
          "[rapl]") {
  const unsigned esu = 14;
  const unsigned dram_esu = 16;
  const std::vector<CounterInfo> counters = {msr_counter(Domain::package, 0u, esu),
                                             msr_counter(Domain::dram, 0u, dram_esu)};
  const std::vector<double> watts = {1000, 1000};
  const double shortest = std::min(wrap_range_joules(counters[0].scale) / watts[0],
                                   wrap_range_joules(counters[1].scale) / watts[1]);
  SECTION("derived") {
    const auto plan = plan_wrap_guard(counters, watts, 0);
    CHECK(plan.needed);
    CHECK_FALSE(plan.configured);
    CHECK(plan.derived_seconds == Approx(shortest / kGuardSafetyFactor));
    CHECK(plan.interval_seconds ==
          Approx(std::clamp(shortest / kGuardSafetyFactor, kGuardMinSeconds, kGuardMaxSeconds)));
  }
  SECTION("configured") {
    const auto plan = plan_wrap_guard(counters, watts, 2.5);
    CHECK(plan.configured);
    CHECK(plan.interval_seconds == 2.5);
  }
  SECTION("clamped to the floor for tiny ranges") {
    CounterInfo tiny = counters[0];
    tiny.scale = {WrapRule::powercap_range, 1000, 1000000};  // 1 mJ
    const auto plan = plan_wrap_guard({tiny}, {1000}, 0);
    CHECK(plan.interval_seconds == kGuardMinSeconds);
    CHECK(plan.derived_seconds < kGuardMinSeconds);
  }
  SECTION("clamped to the cap for a low ceiling") {
    const auto plan = plan_wrap_guard(counters, {1, 1}, 0);
    CHECK(plan.interval_seconds == kGuardMaxSeconds);
  }
  SECTION("64-bit perf counters need no guard") {
    CounterInfo perf = counters[0];
    perf.scale = {WrapRule::modulo_2_64, 0, std::uint64_t{1} << 32};
    CHECK_FALSE(plan_wrap_guard({perf}, {1000}, 0).needed);
  }
}

TEST_CASE("auto tries perf, then powercap, then msr, and stops at the first that works",
          "[rapl]") {
  CHECK(interface_order(RaplInterface::automatic) ==
        std::vector<RaplInterface>{RaplInterface::perf, RaplInterface::powercap, RaplInterface::msr});
  CHECK(interface_order(RaplInterface::msr) == std::vector<RaplInterface>{RaplInterface::msr});

  TempDir dir;
  hwperf::test::rapl_fixture::write_powercap_tree(dir, hwperf::test::rapl_fixture::two_package_zones());
  dir.write("dev/.keep", "");
  dir.write("proc/cpuinfo", hwperf::test::rapl_fixture::cpuinfo("GenuineIntel", 6, 0x55));
  PathsConfig paths;
  paths.sysfs = (dir.path() / "sys").string();
  paths.procfs = (dir.path() / "proc").string();
  paths.devfs = (dir.path() / "dev").string();

  const auto automatic = probe_interfaces(RaplInterface::automatic, paths, two_packages(), DomainSet::all());
  REQUIRE(automatic.size() == 2);
  CHECK(automatic[0].interface == RaplInterface::perf);
  CHECK(automatic[0].source == nullptr);
  CHECK(automatic[1].interface == RaplInterface::powercap);
  CHECK(automatic[1].source != nullptr);

  const auto forced = probe_interfaces(RaplInterface::msr, paths, two_packages(), DomainSet::all());
  REQUIRE(forced.size() == 1);
  CHECK(forced[0].interface == RaplInterface::msr);
  CHECK(forced[0].source == nullptr);
  CHECK(forced[0].reason == "absent");
}

TEST_CASE("configuration errors are ConfigErrors naming the key", "[rapl]") {
  RaplCollectorConfig config;
  SECTION("negative or non-finite power") {
    config.max_power_watts = GENERATE(-1.0, std::numeric_limits<double>::infinity(), std::nan(""));
    CHECK_THROWS_AS(validate_rapl_config(config), ConfigError);
    CHECK_THROWS_WITH(validate_rapl_config(config), Catch::Contains("collectors.rapl.max_power_watts"));
  }
  SECTION("a guard interval that would spin") {
    config.wrap_guard_interval_seconds = 0.0001;
    CHECK_THROWS_WITH(validate_rapl_config(config),
                      Catch::Contains("collectors.rapl.wrap_guard_interval_seconds"));
  }
  SECTION("valid filters") {
    config.domains = {Domain::dram, Domain::psys};
    const DomainSet wanted = validate_rapl_config(config);
    CHECK(wanted.contains(Domain::dram));
    CHECK(wanted.contains(Domain::psys));
    CHECK_FALSE(wanted.contains(Domain::package));
  }
  SECTION("through the public factory") {
    config.max_power_watts = -1;
    PathsConfig paths;
    CHECK_THROWS_AS(make_rapl_collector(config, paths, two_packages()), ConfigError);
  }
  SECTION("disabled means no collector") {
    config.enabled = false;
    CHECK(make_rapl_collector(config, PathsConfig{}, two_packages()) == nullptr);
  }
}

TEST_CASE("make_rapl_collector on empty trees serves, with energy unavailable", "[rapl]") {
  TempDir dir;
  dir.write("sys/.keep", "");
  dir.write("dev/.keep", "");
  dir.write("proc/cpuinfo", hwperf::test::rapl_fixture::cpuinfo("GenuineIntel", 6, 0x55));
  PathsConfig paths;
  paths.sysfs = (dir.path() / "sys").string();
  paths.procfs = (dir.path() / "proc").string();
  paths.devfs = (dir.path() / "dev").string();
  auto collector = make_rapl_collector(RaplCollectorConfig{}, paths, two_packages());
  REQUIRE(collector != nullptr);
  const auto samples = scrape(*collector);
  CHECK(value_of(samples, "hwperf_rapl_energy_available") == 0);
  for (const char* interface : {"perf", "powercap", "msr"}) {
    CAPTURE(interface);
    CHECK(value_of(samples, "hwperf_rapl_interface_probe_success", {{"interface", interface}}) == 0);
  }
}
