// The RAPL engine and its wrap guard over fake sources: several wraps folded between two scrapes,
// the guard thread keeping up, concurrent scrapes and prompt shutdown. Ceilings and the guard's
// period are in test_rapl_guard_plan.cpp.
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
#include "tests/support/support.h"
#include "tests/support/rapl_fakes.h"
#include "tests/support/rapl_fixtures.h"

using namespace hwperf;
using namespace hwperf::test::rapl_fakes;

namespace {

// One package counter in 2^-14 J units whose raw value starts at `start`: the state the test
// moves, the counts per joule, and the counter a fake source serves.
struct PackageCounter {
  std::shared_ptr<FakeState> state;
  std::uint64_t per_joule;
  std::vector<CounterInfo> counters;
};

PackageCounter package_counter_at(std::uint64_t start) {
  const unsigned esu = 14;
  auto state = std::make_shared<FakeState>();
  state->values = {start};
  state->errors = {0};
  return {state, std::uint64_t{1} << esu, {msr_counter(Domain::package, 0u, esu)}};
}

// Moves the counter `step` counts on from `raw`, as the 32-bit register shows it.
void step_counter(FakeState& state, std::uint64_t& raw, std::uint64_t step) {
  raw += step;
  state.set(0, raw % kTwoTo32);
}

}  // namespace

TEST_CASE("the wrap guard folds several wraps between two scrapes (engine, manual ticks)",
          "[rapl]") {
  const std::uint64_t start = 123456;
  const auto [state, per_joule, counters] = package_counter_at(start);
  FakeClock clock;
  RaplEngine engine(std::make_unique<FakeEnergySource>(counters, state), {1000.0}, clock.fn());
  const auto before = engine.snapshot();
  REQUIRE(before.size() == 1);

  // Five guard periods, each advancing 3/4 of the 32-bit range: the counter passes 2^32 three
  // times between the scrapes; a guard read in each period sees every delta below one turn.
  const std::uint64_t step = 3 * (kTwoTo32 / 4);
  const int periods = 5;
  std::uint64_t raw = start;
  for (int i = 0; i < periods; ++i) {
    step_counter(*state, raw, step);
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
  const std::uint64_t start = kTwoTo32 - 777;
  const auto [state, per_joule, counters] = package_counter_at(start);
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
    step_counter(*state, raw, step);
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
