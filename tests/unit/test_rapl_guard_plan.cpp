// How the RAPL engine is sized: power ceilings, the wrap guard's period, why perf's counts need
// the guard too (the kernel's signed 32-bit update), and the hardware unit read from powercap.
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
