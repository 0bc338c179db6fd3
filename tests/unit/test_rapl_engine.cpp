// The RAPL engine and its wrap guard over fake sources: several wraps folded between two scrapes,
// the guard thread keeping up, concurrent scrapes, prompt shutdown, power ceilings and the guard
// period.
#include "tests/catch.hpp"

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

#include "collectors/rapl/perf_source.h"
#include "collectors/rapl/powercap_source.h"
#include "collectors/rapl/rapl_collector.h"
#include "collectors/rapl/rapl_factory.h"
#include "config/errors.h"
#include "exporter/exposition.h"
#include "tests/support.h"
#include "tests/unit/rapl_fakes.h"
#include "tests/unit/test_rapl_fixtures.h"

using namespace hwperf;
using namespace hwperf::test::rapl_fakes;

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

TEST_CASE("the wrap guard thread keeps up with a counter between slow scrapes",
          "[rapl][concurrency]") {
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
          "[rapl][concurrency]") {
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
       "hwperf_rapl_core_joules_total,package=0",
       "hwperf_rapl_wraps_total,domain=core,package=0"},
      {{"intel-rapl:0:1", "dram", dram_range, dram_range, 0},
       "hwperf_rapl_dram_joules_total,package=0",
       "hwperf_rapl_wraps_total,domain=dram,package=0"},
      {{"intel-rapl:1", "package-1", 123, package_range, 0},
       "hwperf_rapl_package_joules_total,package=1",
       "hwperf_rapl_wraps_total,domain=package,package=1"},
      {{"intel-rapl:2", "psys", 4000000, package_range, 0},
       "hwperf_rapl_psys_joules_total",
       "hwperf_rapl_wraps_total,domain=psys"},
  };
  TempDir dir;
  std::vector<Zone> tree;
  for (auto& z : zones) {
    z.value = z.zone.energy_uj;
    tree.push_back(z.zone);
  }
  write_powercap_tree(dir, tree);

  auto probe =
      open_powercap_source((dir.path() / "sys").string(), two_packages(), DomainSet::all());
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

TEST_CASE("power ceilings: configured, else 4x the hardware's figure, else the default", "[rapl]") {
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

TEST_CASE("the guard period is a quarter of the shortest wrap at the ceiling, clamped", "[rapl]") {
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
  SECTION("only a count without a range needs no guard; perf's range is one kernel update") {
    CounterInfo unbounded = counters[0];
    unbounded.scale = {WrapRule::modulo_2_64, 0, std::uint64_t{1} << 32};
    CHECK_FALSE(plan_wrap_guard({unbounded}, {1000}, 0).needed);
    CounterInfo perf = unbounded;
    perf.scale.range =
        perf_update_range_counts(kSmallestRaplUnitJoules, perf.scale.counts_per_joule);
    CHECK(plan_wrap_guard({perf}, {1000}, 0).needed);
  }
}

namespace {

// The kernel's perf RAPL count as arch/x86/events/rapl.c keeps it: on each update (a read(), or
// the kernel's own timer) rapl_event_update takes the 32-bit hardware counter's difference from
// the previous update as a signed 32-bit number, scales it from hardware units (2^-esu J) to
// 2^-32 J (rapl_scale) and adds it to a 64-bit count.
struct KernelPerfCount {
  unsigned esu;
  std::uint32_t hardware = 0;
  std::uint32_t previous = 0;
  std::uint64_t count = 0;

  void consume(std::uint64_t units) { hardware = static_cast<std::uint32_t>(hardware + units); }
  std::uint64_t update() {
    const auto delta = static_cast<std::int32_t>(hardware - previous);
    previous = hardware;
    count += static_cast<std::uint64_t>(static_cast<std::int64_t>(delta) *
                                        (std::int64_t{1} << (32 - esu)));
    return count;
  }
};

// The hardware energy counter and the kernel's count of it, shared by the test (which makes the
// hardware consume energy) and the source below (whose reads are the kernel's updates).
struct KernelPerfState {
  std::mutex mutex;
  KernelPerfCount kernel;
  std::atomic<std::uint64_t> reads{0};

  explicit KernelPerfState(unsigned esu) : kernel{esu} {}
  void consume(std::uint64_t units) {
    const std::lock_guard<std::mutex> lock(mutex);
    kernel.consume(units);
  }
};

// A perf energy counter whose kernel-side count is updated only when it is read, as a read() of
// the perf event runs rapl_event_update: every update is one the engine asked for, by a guard
// tick or a scrape. The kernel's own timer, sized for about 200 W, is left out: above that power
// it cannot keep up, so only the exporter's reads can.
class KernelPerfSource final : public EnergySource {
 public:
  KernelPerfSource(CounterInfo counter, std::shared_ptr<KernelPerfState> state)
      : counters_{std::move(counter)}, state_(std::move(state)) {}
  RaplInterface interface() const override { return RaplInterface::perf; }
  const std::vector<CounterInfo>& counters() const override { return counters_; }
  OrErrno<std::uint64_t> read(std::size_t) override {
    const std::lock_guard<std::mutex> lock(state_->mutex);
    ++state_->reads;
    return {state_->kernel.update(), 0};
  }
  std::map<unsigned, double> package_power_hints() const override { return {}; }

 private:
  std::vector<CounterInfo> counters_;
  std::shared_ptr<KernelPerfState> state_;
};

}  // namespace

TEST_CASE(
    "perf RAPL counts are guarded: the kernel's signed 32-bit update loses energy above "
    "2^31 units between reads",
    "[rapl][concurrency]") {
  const unsigned esu = 16;  // AMD Zen: 15.3 uJ per hardware unit
  const double unit_joules = std::ldexp(1.0, -static_cast<int>(esu));
  const std::uint64_t per_joule = kTwoTo32;  // the perf event's .scale, 2^-32 J
  const std::uint64_t counts_per_unit = per_joule >> esu;
  const double watts = 400;  // a large AMD package

  // The model is the kernel's: 2^31 + 1 units between two updates make the count go down.
  KernelPerfCount model{esu};
  model.consume(1000);
  const std::uint64_t before = model.update();
  model.consume((std::uint64_t{1} << 31) + 1);
  CHECK(static_cast<std::int64_t>(model.update() - before) < 0);

  CounterInfo perf;
  perf.domain = Domain::package;
  perf.package = 0u;
  perf.scale = {WrapRule::modulo_2_64, perf_update_range_counts(unit_joules, per_joule), per_joule};
  perf.source = "energy-pkg on cpu 0";
  // The derived period stays well inside what one kernel update can carry at this power.
  const GuardPlan plan = plan_wrap_guard({perf}, {watts}, 0);
  CHECK(plan.needed);
  CHECK(plan.interval_seconds * watts < std::ldexp(1.0, 31) * unit_joules);

  // The collector as the exporter builds it, its guard ticking every 5 ms (a ceiling high enough
  // that steps this large are plausible so soon), over a counter read by nothing else.
  auto state = std::make_shared<KernelPerfState>(esu);
  std::vector<ProbeResult> probes(1);
  probes[0].interface = RaplInterface::perf;
  probes[0].source = std::make_unique<KernelPerfSource>(perf, state);
  RaplCollectorConfig config;
  config.wrap_guard_interval_seconds = 0.005;
  config.max_power_watts = 1e9;
  auto collector = build_rapl_collector(std::move(probes), config, two_packages());
  const std::map<std::string, std::string> package0 = {{"package", "0"}};
  const double first = value_of(scrape(*collector), "hwperf_rapl_package_joules_total", package0);

  // Between the two scrapes, steps of 3/4 of what one update carries, each seen by the guard
  // (two reads after it: the second began after the step), far more than 2^31 units in all.
  const std::uint64_t step = 3 * (std::uint64_t{1} << 29) + 12345;
  const int steps = 6;
  const std::uint64_t total = step * steps;
  REQUIRE(total > (std::uint64_t{1} << 31));
  bool guard_read = true;
  for (int i = 0; i < steps; ++i) {
    state->consume(step);
    const auto seen = state->reads.load();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (guard_read && state->reads.load() < seen + 2) {
      if (std::chrono::steady_clock::now() > deadline) guard_read = false;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  const auto samples = scrape(*collector);
  CHECK(guard_read);  // else no guard ran: the scrapes were the only reads

  // Every unit arrives, exactly: total units of 2^-esu J, counted in the perf count's 2^-32 J.
  const std::uint64_t counts = total * counts_per_unit;
  const double expected = static_cast<double>(counts / per_joule) +
                          static_cast<double>(counts % per_joule) / static_cast<double>(per_joule);
  CAPTURE(total, expected);
  CHECK(value_of(samples, "hwperf_rapl_package_joules_total", package0) - first == expected);
  CHECK(value_of(samples, "hwperf_rapl_rejected_deltas_total",
                 {{"domain", "package"}, {"package", "0"}}) == 0);
  // Read at the two scrapes alone, the kernel would have carried a different amount.
  KernelPerfCount scrapes_only{esu};
  const std::uint64_t at_first = scrapes_only.update();
  scrapes_only.consume(total);
  CHECK(scrapes_only.update() - at_first != counts);
}

TEST_CASE("the RAPL hardware unit is read from powercap's ranges, the smallest one wins",
          "[rapl]") {
  test::TempDir sysfs;
  // max_energy_range_uj is 0xFFFFFFFF units (intel_rapl_common.c): an Intel package in 2^-14 J
  // and a server DRAM domain in 2^-16 J.
  const auto range_uj = [](int esu) {
    return std::to_string(
        static_cast<std::uint64_t>(std::llround(4294967295.0 * std::ldexp(1.0, -esu) * 1e6)));
  };
  sysfs.write("class/powercap/intel-rapl:0/max_energy_range_uj", range_uj(14));
  sysfs.write("class/powercap/intel-rapl:0:1/max_energy_range_uj", range_uj(16));
  sysfs.write("class/powercap/dtpm/max_energy_range_uj", "1");  // not RAPL: ignored
  const auto unit = powercap_energy_unit_joules(sysfs.path().string());
  REQUIRE(unit.has_value());
  CHECK(*unit == Approx(std::ldexp(1.0, -16)).epsilon(1e-9));
  test::TempDir empty;
  CHECK_FALSE(powercap_energy_unit_joules(empty.path().string()).has_value());
}
