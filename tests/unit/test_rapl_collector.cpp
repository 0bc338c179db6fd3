// The RAPL collector over a fake energy source: what it exports (families, labels, joules
// computed here from the raw values written), rejected deltas, read errors, frozen counters.
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

TEST_CASE("the collector exports joules per domain with package, die and psys labels", "[rapl]") {
  auto state = std::make_shared<FakeState>();
  const unsigned esu = 14;
  const unsigned dram_esu = 16;
  std::vector<CounterInfo> counters = {
      msr_counter(Domain::package, 0u, esu), msr_counter(Domain::package, 1u, esu),
      msr_counter(Domain::core, 0u, esu), msr_counter(Domain::dram, 1u, dram_esu, 1u),
      msr_counter(Domain::psys, std::nullopt, esu)};
  const std::vector<std::uint64_t> start = {1000, kTwoTo32 - 5, 42, 7, 900};
  const std::vector<std::uint64_t> step = {16384 * 3 + 5, 10, 0, 65536, 1};
  for (std::size_t i = 0; i < start.size(); ++i) state->values.push_back(start[i]);
  state->errors.resize(start.size(), 0);
  FakeClock clock;
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
    return static_cast<double>(step[i]) / static_cast<double>(counters[i].scale.counts_per_joule);
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

  CHECK(value_of(samples, "hwperf_rapl_wraps_total", {{"domain", "package"}, {"package", "1"}}) ==
        1);
  CHECK(value_of(samples, "hwperf_rapl_wraps_total", {{"domain", "package"}, {"package", "0"}}) ==
        0);
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
  FakeClock clock;
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
  FakeClock clock;
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
  const auto just_before =
      std::chrono::milliseconds(static_cast<std::int64_t>(kFrozenAfterSeconds * 1000) - 1);
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
