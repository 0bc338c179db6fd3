// The hwmon engine and collector with an injected clock and tick (no sleeping): power integrated
// exactly whatever the scrapes, counters exact across wraps, and every bad input a state with a
// reason and no jump in joules. One short test runs the real tick thread on the real clock.
#include "tests/catch.hpp"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "collectors/hwmon/hwmon_collector.h"
#include "collectors/hwmon/hwmon_engine.h"
#include "collectors/hwmon/hwmon_registration.h"
#include "tests/support/support.h"
#include "tests/support/hwmon_fixtures.h"

using namespace hwperf;
using namespace hwperf::hwmon;
using namespace hwperf::test::hwmon_fixture;

namespace {

// Time that moves only when the test says.
struct MeterClock {
  std::shared_ptr<HwmonEngine::Clock::time_point> now =
      std::make_shared<HwmonEngine::Clock::time_point>();
  HwmonEngine::NowFn fn() const {
    auto shared = now;
    return [shared] { return *shared; };
  }
  void advance(std::chrono::milliseconds step) const { *now += step; }
};

// Sensors whose next reading the test sets.
class FakeMeters final : public SensorSource {
 public:
  explicit FakeMeters(std::vector<SensorSpec> specs)
      : specs_(std::move(specs)), next_(specs_.size()) {}
  const std::vector<SensorSpec>& sensors() const override { return specs_; }
  OrErrno<std::int64_t> read(std::size_t index) override { return next_.at(index); }
  void set(std::size_t index, std::int64_t value) { next_.at(index) = {value, 0}; }
  void fail(std::size_t index, int error) { next_.at(index) = {0, error}; }

 private:
  std::vector<SensorSpec> specs_;
  std::vector<OrErrno<std::int64_t>> next_;
};

SensorSpec fake_meter_spec(Source source, const std::string& sensor = "power1") {
  SensorSpec made;
  made.chip = "ACPI000D:00";
  made.sensor = sensor;
  made.name = source == Source::counter ? "aem2" : "power_meter";
  made.kind = Kind::node;
  made.source = source;
  made.path = "fake/" + sensor;
  return made;
}

// The node meter's joules in a scrape of `collector`.
double scraped_node_joules(Collector& collector) {
  return test::value_of(test::scrape(collector), "hwperf_hwmon_node_joules_total");
}

// A power schedule of steps that do not fall on ticks: (until ms, watts).
struct PowerStep {
  int until_ms;
  double watts;
};
const std::vector<PowerStep> kPowerSteps = {{2050, 100}, {5030, 300}, {10000, 50}};

// Exact joules of kPowerSteps between `from_ms` and `to_ms`.
double power_steps_joules(int from_ms, int to_ms) {
  double joules = 0;
  int start = -1000000;  // before the test, the first step's power
  for (const auto& segment : kPowerSteps) {
    const int lo = std::max(start, from_ms);
    const int hi = std::min(segment.until_ms, to_ms);
    if (hi > lo) joules += segment.watts * (hi - lo) / 1000.0;
    start = segment.until_ms;
  }
  return joules;
}

// What an averaging meter reports at `at_ms`: its mean power over the window that ends then
// (power1_average over power1_average_interval), in microwatts.
std::int64_t averaged_microwatts(int at_ms, int window_ms) {
  return std::llround(power_steps_joules(at_ms - window_ms, at_ms) / (window_ms / 1000.0) * 1e6);
}

// Runs kPowerSteps through an ACPI node meter fixture, ticking every 100 ms on the fake clock and
// scraping every `scrape_every_ms` between ticks (0: only at the end). Returns the last scrape's
// joules.
double run_power_steps(int scrape_every_ms) {
  constexpr int kTickMs = 100;
  test::TempDir root;
  const std::string attribute =
      write_acpi_meter(root, "hwmon1", "ACPI000D:00", averaged_microwatts(0, kTickMs), "", kTickMs);
  const MeterClock clock;
  auto survey = survey_meters((root.path() / "sys").string(), test::two_socket_topology());
  REQUIRE(survey.discovery.sensors.size() == 1);
  auto engine =
      std::make_unique<HwmonEngine>(make_sysfs_source(std::move(survey.discovery.sensors)),
                                    EngineSettings{kTickMs / 1000.0, 300}, clock.fn());
  HwmonEngine* ticked = engine.get();
  auto collector = make_hwmon_collector(std::move(engine), false);
  double last = 0;
  for (int ms = 50; ms <= 10000; ms += 50) {
    clock.advance(std::chrono::milliseconds(50));
    if (ms % kTickMs == 0) {
      set_value(root, attribute, averaged_microwatts(ms, kTickMs));
      ticked->tick();
    }
    // Scrapes half a tick after one, when a scrape that read the meter would add a point.
    if (scrape_every_ms > 0 && (ms + kTickMs / 2) % scrape_every_ms == 0) {
      const double joules = scraped_node_joules(*collector);
      CHECK(joules >= last);  // monotonic
      last = joules;
    }
  }
  return scraped_node_joules(*collector);
}

}  // namespace

TEST_CASE("a stepping power meter integrates to the exact joules whatever the scrape interval",
          "[hwmon]") {
  const double truth = power_steps_joules(0, 10000);
  const double every_300ms = run_power_steps(300);
  const double once = run_power_steps(0);
  CAPTURE(truth, every_300ms, once);
  CHECK(std::abs(every_300ms - truth) <= 0.01 * truth);
  CHECK(std::abs(once - truth) <= 0.01 * truth);
  // Scrapes read nothing: the totals are the same to the bit.
  CHECK(every_300ms == once);
}

TEST_CASE("a counting meter's energy is exact across the wraps of the kernel's 32-bit long",
          "[hwmon]") {
  auto source = std::make_unique<FakeMeters>(
      std::vector<SensorSpec>{fake_meter_spec(Source::counter, "energy1")});
  FakeMeters* fake = source.get();
  const MeterClock clock;
  // The hwmon core prints the counter as a C long: on a 32-bit kernel it goes from 2^31 - 1 to
  // -2^31 and up again.
  std::int64_t as_printed = 2147483647 - 5000000;
  fake->set(0, as_printed);
  auto engine =
      std::make_unique<HwmonEngine>(std::move(source), EngineSettings{1, 300}, clock.fn());
  HwmonEngine* ticked = engine.get();
  auto collector = make_hwmon_collector(std::move(engine), false);
  std::uint64_t truth_uj = 0;
  std::uint64_t wraps = 0;
  std::uint64_t lcg = 0x2545F4914F6CDD1Dull;  // fixed seed: the run is reproducible
  for (int second = 0; second < 40; ++second) {
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    const std::int64_t step = 900000000 + static_cast<std::int64_t>((lcg >> 33) % 500000000);
    truth_uj += static_cast<std::uint64_t>(step);
    as_printed += step;
    if (as_printed > 2147483647) {
      as_printed -= std::int64_t{1} << 32;
      ++wraps;
    }
    fake->set(0, as_printed);
    clock.advance(std::chrono::seconds(1));
    ticked->tick();
  }
  const auto samples = test::scrape(*collector);
  CAPTURE(truth_uj, wraps);
  REQUIRE(wraps >= 5);
  CHECK(std::llround(
            test::value_of(samples, "hwperf_hwmon_node_joules_total", {{"source", "counter"}}) *
            1e6) == static_cast<long long>(truth_uj));
  CHECK(test::value_of(samples, "hwperf_hwmon_wraps_total") == static_cast<double>(wraps));
  CHECK(test::value_of(samples, "hwperf_hwmon_unmeasured_seconds_total") == 0);
}

TEST_CASE("a counting meter that starts again or jumps adds nothing for that interval", "[hwmon]") {
  auto source = std::make_unique<FakeMeters>(
      std::vector<SensorSpec>{fake_meter_spec(Source::counter, "energy1")});
  FakeMeters* fake = source.get();
  const MeterClock clock;
  fake->set(0, 50000000);
  auto engine =
      std::make_unique<HwmonEngine>(std::move(source), EngineSettings{1, 300}, clock.fn());
  HwmonEngine* ticked = engine.get();
  auto collector = make_hwmon_collector(std::move(engine), false);
  const auto tick_with = [&](std::int64_t value) {
    fake->set(0, value);
    clock.advance(std::chrono::seconds(1));
    ticked->tick();
  };
  tick_with(50000000 + 300000000);  // 300 J
  tick_with(1000);                  // the BMC reset: back near 0
  tick_with(1000 + 200000000);      // 200 J
  const std::int64_t jump = static_cast<std::int64_t>(kMaxPlausibleWatts * 1e6) * 3;
  tick_with(1000 + 200000000 + jump);              // more than the ceiling allows in 1 s
  tick_with(1000 + 200000000 + jump + 100000000);  // 100 J
  const auto samples = test::scrape(*collector);
  CHECK(test::value_of(samples, "hwperf_hwmon_node_joules_total") == Approx(300 + 200 + 100));
  CHECK(test::value_of(samples, "hwperf_hwmon_unmeasured_seconds_total") == Approx(2));
  CHECK(test::value_of(samples, "hwperf_hwmon_sensor_state", {{"state", "ok"}}) == 1);
}

TEST_CASE("a failing power meter is a state with a reason and never a jump in joules", "[hwmon]") {
  auto source =
      std::make_unique<FakeMeters>(std::vector<SensorSpec>{fake_meter_spec(Source::integrated)});
  FakeMeters* fake = source.get();
  const MeterClock clock;
  fake->set(0, 200000000);  // 200 W
  auto engine =
      std::make_unique<HwmonEngine>(std::move(source), EngineSettings{1, 300}, clock.fn());
  HwmonEngine* ticked = engine.get();
  auto collector = make_hwmon_collector(std::move(engine), false);
  const auto tick = [&](int seconds) {
    clock.advance(std::chrono::seconds(seconds));
    ticked->tick();
  };
  const auto state = [&](const char* name) {
    return test::value_of(test::scrape(*collector), "hwperf_hwmon_sensor_state", {{"state", name}});
  };
  tick(1);
  CHECK(scraped_node_joules(*collector) == Approx(200));
  // Failures shorter than the bridge: each a state, and the energy bridged when it reads again.
  struct Failure {
    int error;
    const char* state;
  };
  double expected = 200;
  for (const Failure& failure : {Failure{EIO, "io_error"}, Failure{ENODATA, "no_data"},
                                 Failure{EINVAL, "garbage"}, Failure{ETIMEDOUT, "io_error"}}) {
    CAPTURE(failure.state);
    fake->fail(0, failure.error);
    tick(1);
    CHECK(state(failure.state) == 1);
    CHECK(state("ok") == 0);
    CHECK(scraped_node_joules(*collector) == Approx(expected));
    fake->set(0, 200000000);
    tick(1);
    expected += 2 * 200;
    CHECK(state("ok") == 1);
    CHECK(scraped_node_joules(*collector) == Approx(expected));
  }
  // A reading no meter gives (200 MW) is garbage, not energy.
  fake->set(0, 200000000000000);
  tick(1);
  CHECK(state("garbage") == 1);
  CHECK(scraped_node_joules(*collector) == Approx(expected));
  // The device gone for a minute: its energy then is unknown, and nothing is added for it.
  fake->fail(0, ENODEV);
  for (int i = 0; i < 60; ++i) tick(1);
  CHECK(state("gone") == 1);
  fake->set(0, 500000000);
  tick(1);
  CHECK(state("ok") == 1);
  CHECK(scraped_node_joules(*collector) == Approx(expected));
  const auto samples = test::scrape(*collector);
  // Not integrated: the second that ended on garbage, the minute gone, the second back.
  CHECK(test::value_of(samples, "hwperf_hwmon_unmeasured_seconds_total") == Approx(1 + 60 + 1));
  CHECK(test::value_of(samples, "hwperf_hwmon_read_errors_total") == 4 + 1 + 60);
  tick(1);
  CHECK(scraped_node_joules(*collector) == Approx(expected + 500));
}

TEST_CASE("a power meter stuck on one value is stale and adds nothing until it moves", "[hwmon]") {
  auto source =
      std::make_unique<FakeMeters>(std::vector<SensorSpec>{fake_meter_spec(Source::integrated)});
  FakeMeters* fake = source.get();
  const MeterClock clock;
  const double stale_after = 30;
  fake->set(0, 100000000);  // 100 W
  auto engine =
      std::make_unique<HwmonEngine>(std::move(source), EngineSettings{1, stale_after}, clock.fn());
  HwmonEngine* ticked = engine.get();
  auto collector = make_hwmon_collector(std::move(engine), false);
  for (int second = 1; second <= 100; ++second) {
    clock.advance(std::chrono::seconds(1));
    ticked->tick();
  }
  auto samples = test::scrape(*collector);
  CHECK(test::value_of(samples, "hwperf_hwmon_sensor_state", {{"state", "stale"}}) == 1);
  // Held for its first stale_after seconds, then no more.
  CHECK(test::value_of(samples, "hwperf_hwmon_node_joules_total") == Approx(100 * stale_after));
  CHECK(test::value_of(samples, "hwperf_hwmon_unmeasured_seconds_total") ==
        Approx(100 - stale_after));
  fake->set(0, 120000000);
  clock.advance(std::chrono::seconds(1));
  ticked->tick();
  fake->set(0, 140000000);
  clock.advance(std::chrono::seconds(1));
  ticked->tick();
  samples = test::scrape(*collector);
  CHECK(test::value_of(samples, "hwperf_hwmon_sensor_state", {{"state", "ok"}}) == 1);
  // Nothing for the stuck stretch; from the first new reading on, the trapezoid.
  CHECK(test::value_of(samples, "hwperf_hwmon_node_joules_total") ==
        Approx(100 * stale_after + (120 + 140) / 2.0));
}

TEST_CASE("the hwmon tick thread integrates on the real clock without scrapes", "[hwmon]") {
  test::TempDir root;
  const double watts = 100;
  write_power_meter_acpi(root, static_cast<std::int64_t>(watts * 1e6));
  auto survey = survey_meters((root.path() / "sys").string(), test::two_socket_topology());
  REQUIRE(survey.discovery.sensors.size() == 1);
  const auto started = HwmonEngine::Clock::now();
  auto collector = make_hwmon_collector(std::make_unique<HwmonEngine>(
      make_sysfs_source(std::move(survey.discovery.sensors)), EngineSettings{0.02, 300}));
  // Joules appear without a scrape asking for them; on a loaded machine under ASan the thread
  // may be late, so the wait is long and only the upper bound is tight: energy can never be more
  // than the power times the time since the baseline.
  const auto deadline = started + std::chrono::seconds(10 * HWPERF_SLOWDOWN);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  double joules = scraped_node_joules(*collector);
  while (joules < 10 && HwmonEngine::Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    joules = scraped_node_joules(*collector);
  }
  const double elapsed = std::chrono::duration<double>(HwmonEngine::Clock::now() - started).count();
  CAPTURE(joules, elapsed);
  CHECK(joules >= 10);
  CHECK(joules <= watts * elapsed * 1.0001);
}

TEST_CASE("hwmon scrapes race the tick thread and see joules only grow", "[hwmon][concurrency]") {
  test::TempDir root;
  write_power_meter_acpi(root, 100000000);
  auto survey = survey_meters((root.path() / "sys").string(), test::two_socket_topology());
  REQUIRE(survey.discovery.sensors.size() == 1);
  auto collector = make_hwmon_collector(std::make_unique<HwmonEngine>(
      make_sysfs_source(std::move(survey.discovery.sensors)), EngineSettings{0.005, 300}));
  // Nothing here may throw on another thread: the families are read by hand.
  const auto joules_now = [&collector] {
    std::vector<prometheus::MetricFamily> families;
    collector->collect(families);
    for (const auto& family : families) {
      if (family.name == "hwperf_hwmon_node_joules_total" && family.metric.size() == 1) {
        return family.metric.front().counter.value;
      }
    }
    return -1.0;
  };
  std::atomic<int> bad{0};
  const auto scraper = [&] {
    double last = 0;
    for (int i = 0; i < 300; ++i) {
      const double joules = joules_now();
      if (joules < last) ++bad;
      last = joules;
    }
  };
  std::thread first(scraper);
  std::thread second(scraper);
  first.join();
  second.join();
  CHECK(bad == 0);
  CHECK(joules_now() >= 0);
}
