// The real binary and RAPL, end to end: energy exact across many wraps between slow scrapes
// while this process advances a fixture powercap tree; perf through the real perf_event_open
// path; and a machine without RAPL, where the exporter says why and serves the rest.
#include "tests/catch.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "collectors/rapl/rapl_engine.h"
#include "tests/support/support.h"
#include "tests/support/rapl_fixtures.h"

using namespace hwperf;
using namespace hwperf::test::rapl_fixture;
namespace fs = std::filesystem;

namespace {

// Two packages of one CPU each, numbered 0 and 1 like this machine's CPUs.
const char* kTwoPackages = "synthetic:pack:2 core:1 pu:1";

struct Fixture {
  test::TempDir dir;
  std::vector<std::string> args;
  explicit Fixture(const std::string& rapl_yaml) {
    dir.write("sys/.keep", "");
    dir.write("dev/.keep", "");
    dir.write("proc/cpuinfo", cpuinfo("GenuineIntel", 6, 0x55));
    const auto config =
        dir.write("hwperf.yml", std::string("topology:\n  source: \"") + kTwoPackages +
                                    "\"\ncollectors:\n  papi:\n    enabled: false\n"
                                    "  rapl:\n" +
                                    rapl_yaml);
    args = {"--config.file=" + config.string(), "--path.sysfs=" + (dir.path() / "sys").string(),
            "--path.devfs=" + (dir.path() / "dev").string(),
            "--path.procfs=" + (dir.path() / "proc").string()};
  }
};

std::vector<test::Sample> scrape(const test::RunningExporter& exporter) {
  const auto response = exporter.get("/metrics");
  REQUIRE(response.status == 200);
  return test::parse_exposition(response.body);
}

double only_value(const std::vector<test::Sample>& samples, const std::string& name,
                  const std::map<std::string, std::string>& labels = {}) {
  const auto found = test::find_samples(samples, name, labels);
  REQUIRE(found.size() == 1);
  return found.front().value;
}

// A joule value from the exposition in whole microjoules, rounded to the nearest.
std::uint64_t microjoules(double joules) {
  REQUIRE(joules >= 0);
  return static_cast<std::uint64_t>(std::llround(joules * 1e6));
}

// A simulated powercap zone: the true energy, and the value the kernel would show for it.
struct SimZone {
  Zone zone;
  std::string family;
  std::map<std::string, std::string> labels;
  std::uint64_t value = 0;
  std::uint64_t truth_uj = 0;
  std::uint64_t wraps = 0;

  void advance(std::uint64_t energy_uj) {
    const std::uint64_t unit = 1;  // ranges below 2^32 - 1 uJ: one counter unit is 1 uJ
    value += energy_uj;
    while (value > zone.range_uj) {
      value -= zone.range_uj + unit;
      ++wraps;
    }
    truth_uj += energy_uj;
  }
};

}  // namespace

TEST_CASE("powercap energy equals the true total across many wraps between slow scrapes",
          "[rapl][e2e]") {
  // Ranges of a few joules so that wraps come every second or so; the configured ceiling makes
  // the derived guard period short enough for them. Below 10^7 uJ every energy_uj is 7 digits
  // and a newline, one 8-byte word, so the exporter never reads a value half written (see
  // overwrite_in_place in the fixtures).
  const std::uint64_t package_range = 5000000;  // 5 J
  const std::uint64_t dram_range = 3000000;     // 3 J
  const double max_watts = 5;
  Fixture fixture("    max_power_watts: " + std::to_string(max_watts) + "\n");

  const std::string package_joules = "hwperf_rapl_package_joules_total";
  const std::map<std::string, std::string> package_0 = {{"package", "0"}};
  const std::map<std::string, std::string> package_1 = {{"package", "1"}};
  std::vector<SimZone> zones = {
      {{"intel-rapl:0", "package-1", 4000000, package_range, 0}, package_joules, package_1},
      {{"intel-rapl:0:0", "dram", 2999999, dram_range, 0},
       "hwperf_rapl_dram_joules_total",
       package_1},
      {{"intel-rapl:1", "package-0", 17, package_range, 0}, package_joules, package_0},
      {{"intel-rapl:1:0", "core", 0, package_range, 0}, "hwperf_rapl_core_joules_total", package_0},
      {{"intel-rapl:2", "psys", package_range, package_range, 0},
       "hwperf_rapl_psys_joules_total",
       {}},
  };
  // The MMIO duplicate of package-0 never moves and must not be counted.
  write_zone(fixture.dir, {"intel-rapl-mmio:0", "package-0", 123, package_range, 0});
  for (auto& z : zones) {
    z.value = z.zone.energy_uj;
    write_zone(fixture.dir, z.zone);
  }

  test::RunningExporter exporter(fixture.args);
  auto samples = scrape(exporter);
  INFO(exporter.stderr_text());
  CHECK(only_value(samples, "hwperf_rapl_energy_available") == 1);
  CHECK(only_value(samples, "hwperf_rapl_interface_info", {{"interface", "powercap"}}) == 1);
  CHECK(only_value(samples, "hwperf_rapl_interface_probe_success", {{"interface", "perf"}}) == 0);
  // The guard period is derived: a quarter of the shortest wrap at the ceilings. Packages may
  // draw max_watts each, the platform (psys) twice what both packages may.
  const double psys_watts = 2 * (2 * max_watts);
  const double shortest_wrap = std::min({static_cast<double>(dram_range) / 1e6 / max_watts,
                                         static_cast<double>(package_range) / 1e6 / max_watts,
                                         static_cast<double>(package_range) / 1e6 / psys_watts});
  const double guard = only_value(samples, "hwperf_rapl_wrap_guard_interval_seconds");
  CHECK(guard == Approx(shortest_wrap / rapl::kGuardSafetyFactor));
  CHECK(guard < 0.1);  // well under the 100 ms between steps below
  for (const auto& z : zones) CHECK(only_value(samples, z.family, z.labels) == 0);

  // Steps of up to a quarter of the smallest range every 100 ms, longer than the guard period,
  // so the guard sees every wrap (even if it missed a read, three steps stay below a range);
  // scrapes come only every 1.5 s, with several wraps in between.
  const auto step_period = std::chrono::milliseconds(100);
  const int steps_per_scrape = 15;
  const int scrapes = 3;
  std::uint64_t lcg = 0x2545F4914F6CDD1Dull;  // fixed seed: the run is reproducible
  auto next_step = [&lcg](std::uint64_t limit) {
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return (lcg >> 33) % (limit + 1);
  };
  for (int s = 0; s < scrapes; ++s) {
    std::uint64_t wraps_before = 0;
    for (const auto& z : zones) wraps_before += z.wraps;
    for (int i = 0; i < steps_per_scrape; ++i) {
      for (std::size_t z = 0; z < zones.size(); ++z) {
        // One zone moves once, then stands still: equal readings must add nothing. (Had it never
        // moved, it would be reported frozen after 5 s; that has a test of its own.)
        const bool still = z == 3 && (s > 0 || i > 0);
        const std::uint64_t energy = still ? 0 : next_step(dram_range / 4);
        zones[z].advance(energy);
        set_energy(fixture.dir, zones[z].zone.dir, zones[z].value);
      }
      std::this_thread::sleep_for(step_period);
    }
    samples = scrape(exporter);
    for (const auto& z : zones) {
      CAPTURE(z.zone.dir, s, z.truth_uj, z.wraps);
      // Exact to the microjoule: the exporter keeps whole joules plus a remainder in uJ and only
      // the sample is a double, off by at most a few 1e-15 J at these totals (< 100 J). Rounded
      // back to whole uJ it is the exporter's count, so a single uJ missing or extra (one
      // counter unit per wrap here) fails, which Approx's default relative epsilon let through.
      CHECK(microjoules(only_value(samples, z.family, z.labels)) == z.truth_uj);
      auto with_domain = z.labels;
      with_domain["domain"] =
          z.family.substr(std::string("hwperf_rapl_").size(),
                          z.family.find("_joules") - std::string("hwperf_rapl_").size());
      CHECK(only_value(samples, "hwperf_rapl_wraps_total", with_domain) ==
            static_cast<double>(z.wraps));
      CHECK(only_value(samples, "hwperf_rapl_rejected_deltas_total", with_domain) == 0);
    }
    // Several wraps between these two scrapes (the steps are a fixed pseudo-random series).
    std::uint64_t wraps_after = 0;
    for (const auto& z : zones) wraps_after += z.wraps;
    CAPTURE(s);
    CHECK(wraps_after - wraps_before >= 4);
  }

  // promtool comes with Debian's prometheus package, which scripts/deps.sh installs.
  if (!test::have_program("promtool"))
    FAIL("promtool not found: install Debian's prometheus (scripts/deps.sh)");
  const auto file = fixture.dir.write("rapl.prom", exporter.get("/metrics").body);
  const int rc =
      std::system(("promtool check metrics < " + file.string() + " >/dev/null 2>&1").c_str());
  CHECK(rc == 0);
  CHECK(exporter.stop() == 0);
}

TEST_CASE("perf energy advances through the real perf_event_open path",
          "[rapl][e2e][kernel_perf]") {
  Fixture fixture("    interface: perf\n");
  // The `power` PMU, backed by the software PMU's cpu-clock: "joules" are seconds.
  const std::string pmu = "sys/bus/event_source/devices/power/";
  fixture.dir.write(pmu + "type", "1\n");
  fixture.dir.write(pmu + "cpumask", "0-1\n");
  fixture.dir.write(pmu + "format/event", "config:0-7\n");
  fixture.dir.write(pmu + "events/energy-pkg", "event=0x00\n");
  fixture.dir.write(pmu + "events/energy-pkg.scale", "1e-09\n");
  fixture.dir.write(pmu + "events/energy-pkg.unit", "Joules\n");

  test::RunningExporter exporter(fixture.args);
  INFO(exporter.stderr_text());
  const auto first = scrape(exporter);
  const auto start = std::chrono::steady_clock::now();
  CHECK(only_value(first, "hwperf_rapl_interface_info", {{"interface", "perf"}}) == 1);
  // 64-bit counts, but the kernel adds each update as a signed 32-bit hardware delta: guarded,
  // with no powercap here to tell the unit, as for the smallest one (2^-16 J) at the default
  // 1000 W ceiling.
  const auto guard = test::find_samples(first, "hwperf_rapl_wrap_guard_interval_seconds");
  REQUIRE(guard.size() == 1);
  CHECK(guard.front().value * 1000.0 < std::ldexp(1.0, 31) * rapl::kSmallestRaplUnitJoules);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const auto second = scrape(exporter);
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  for (const char* package : {"0", "1"}) {
    CAPTURE(package, elapsed.count());
    const double delta =
        only_value(second, "hwperf_rapl_package_joules_total", {{"package", package}}) -
        only_value(first, "hwperf_rapl_package_joules_total", {{"package", package}});
    CHECK(delta > 0.5 * elapsed.count());
    CHECK(delta < elapsed.count() + 0.1);
  }
}

TEST_CASE("without RAPL the exporter starts, says why per interface, and serves the rest",
          "[rapl][e2e]") {
  Fixture fixture("    enabled: true\n");
  test::RunningExporter exporter(fixture.args);
  const auto samples = scrape(exporter);
  const std::string log = exporter.stderr_text();
  INFO(log);
  CHECK(only_value(samples, "hwperf_rapl_energy_available") == 0);
  CHECK(only_value(samples, "hwperf_scrape_collector_success", {{"collector", "rapl"}}) == 1);
  CHECK(only_value(samples, "hwperf_scrape_collector_success", {{"collector", "topology"}}) == 1);
  CHECK_FALSE(test::find_samples(samples, "hwperf_cpu_info").empty());
  CHECK(test::find_samples(samples, "hwperf_rapl_package_joules_total").empty());
  // One line per interface tried, each with its remedy, then the verdict.
  CHECK_THAT(log, Catch::Contains("rapl: perf:"));
  CHECK_THAT(log, Catch::Contains("rapl: powercap:") && Catch::Contains("modprobe intel_rapl_msr"));
  CHECK_THAT(log, Catch::Contains("rapl: msr:") && Catch::Contains("modprobe msr"));
  CHECK_THAT(log, Catch::Contains("energy is unavailable"));
  CHECK(exporter.stop() == 0);
}

TEST_CASE("on this machine's own /sys, /dev and /proc the exporter serves either way",
          "[rapl][e2e]") {
  // No --path flags: whatever this host has. Here (a VM without RAPL) that is "unavailable";
  // on RAPL hardware it is an interface in use. Both must serve and say which.
  test::TempDir dir;
  const auto config = dir.write("hwperf.yml", "collectors:\n  papi:\n    enabled: false\n");
  test::RunningExporter exporter({"--config.file=" + config.string()});
  const auto samples = scrape(exporter);
  const std::string log = exporter.stderr_text();
  INFO(log);
  CHECK(only_value(samples, "hwperf_scrape_collector_success", {{"collector", "rapl"}}) == 1);
  const double available = only_value(samples, "hwperf_rapl_energy_available");
  if (available == 0) {
    CHECK_THAT(log, Catch::Contains("energy is unavailable"));
    CHECK(test::find_samples(samples, "hwperf_rapl_interface_info").empty());
  } else {
    CHECK(test::find_samples(samples, "hwperf_rapl_interface_info").size() == 1);
    // Which domains exist is the machine's business (some VMs expose only a perf energy-psys
    // that reads 0); every domain found has its frozen gauge, and a domain that is not frozen
    // has its joules.
    const auto domains = test::find_samples(samples, "hwperf_rapl_energy_frozen");
    CHECK_FALSE(domains.empty());
    for (const auto& domain : domains) {
      if (domain.value != 0) continue;
      auto place = domain.labels;
      const std::string family = "hwperf_rapl_" + place["domain"] + "_joules_total";
      place.erase("domain");
      CAPTURE(family);
      CHECK(test::find_samples(samples, family, place).size() == 1);
    }
  }
  CHECK(exporter.stop() == 0);
}
