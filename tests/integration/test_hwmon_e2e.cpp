// The hwmon collector through the registry, in the real binary, on fixture trees
// (tests/support/hwmon_fixtures.h): Grace's sockets on packages 36 and 2364 (the topology from
// tests/fixtures/hwmon/grace_two_socket.xml), the x86 node meter beside RAPL's powercap zones,
// this machine (no meter at all), and the collector's keys.
#include "tests/catch.hpp"

#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/support.h"
#include "tests/support/hwmon_fixtures.h"
#include "tests/support/rapl_fixtures.h"

using namespace hwperf;
using namespace hwperf::test::hwmon_fixture;

namespace {

// A fixture root with `topology` and the hwmon keys given, PAPI off.
std::vector<std::string> hwmon_exporter_args(const test::TempDir& root, const std::string& topology,
                                             const std::string& hwmon_yaml = "") {
  root.write("sys/.keep", "");
  root.write("dev/.keep", "");
  root.write("proc/cpuinfo", test::rapl_fixture::cpuinfo("GenuineIntel", 6, 0x55));
  const auto config = root.write("hwperf.yml", "topology:\n  source: \"" + topology +
                                                   "\"\ncollectors:\n  papi:\n    enabled: "
                                                   "false\n  hwmon:\n    enabled: true\n" +
                                                   hwmon_yaml);
  return {"--config.file=" + config.string(), "--path.sysfs=" + (root.path() / "sys").string(),
          "--path.devfs=" + (root.path() / "dev").string(),
          "--path.procfs=" + (root.path() / "proc").string()};
}

std::string grace_topology_source() {
  return "xml:" + test::fixtures_dir() + "/hwmon/grace_two_socket.xml";
}

void promtool_accepts_hwmon(const test::TempDir& root, const std::string& exposition) {
  if (!test::have_program("promtool"))
    FAIL("promtool not found: apt-get install prometheus (scripts/deps.sh does)");
  const auto file = root.write("hwmon.prom", exposition);
  int exit_code = -1;
  const std::string lint = test::run_shell("promtool check metrics < " + file.string(), &exit_code);
  INFO(lint);
  CHECK(exit_code == 0);
  CHECK(lint.empty());
}

}  // namespace

TEST_CASE("the binary exports Grace's socket meters on packages 36 and 2364", "[hwmon][e2e]") {
  test::TempDir root;
  write_grace(root, {0, 1}, 250000000);
  auto args = hwmon_exporter_args(root, grace_topology_source());
  args.push_back("--once");
  const auto result = test::run_exporter(args);
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  const auto samples = test::parse_exposition(result.out);
  for (const char* package : {"36", "2364"}) {
    CAPTURE(package);
    for (const char* family :
         {"hwperf_hwmon_package_joules_total", "hwperf_hwmon_cpu_rail_joules_total",
          "hwperf_hwmon_sysio_rail_joules_total"}) {
      CAPTURE(family);
      CHECK(test::find_samples(samples, family, {{"package", package}, {"source", "integrated"}})
                .size() == 1);
    }
    // The topology's own package labels are the same ids.
    CHECK(!test::find_samples(samples, "hwperf_cpu_info", {{"package", package}}).empty());
  }
  CHECK(test::value_of(samples, "hwperf_hwmon_energy_available") == 1);
  CHECK(test::value_of(samples, "hwperf_scrape_collector_success", {{"collector", "hwmon"}}) == 1);
  promtool_accepts_hwmon(root, result.out);
}

TEST_CASE("the binary's --check-config names each meter, its family and its package",
          "[hwmon][e2e]") {
  test::TempDir root;
  write_grace(root, {0, 1}, 250000000);
  write_coretemp(root);
  auto args = hwmon_exporter_args(root, grace_topology_source());
  args.push_back("--check-config");
  const auto result = test::run_exporter(args);
  INFO(result.out << result.err);
  CHECK(result.exit_code == 0);
  const std::string report = result.out + result.err;
  CHECK(report.find("hwmon: ACPI000D:03 power1 (power_meter, \"Grace Power Socket 1\"): "
                    "hwperf_hwmon_package_joules_total of package 2364, integrated from " +
                    (root.path() / "sys/class/hwmon/hwmon5/device/power1_average").string()) !=
        std::string::npos);
  CHECK(report.find("hwmon: the meters number their sockets from 0 while the packages are 36, "
                    "2364") != std::string::npos);
}

TEST_CASE("the x86 ACPI node meter gives the node's joules beside RAPL's", "[hwmon][e2e]") {
  test::TempDir root;
  namespace rapl = test::rapl_fixture;
  rapl::write_powercap_tree(root, rapl::two_package_zones());
  const double watts = 300;
  write_power_meter_acpi(root, static_cast<std::int64_t>(watts * 1e6));
  const double interval = 0.1;
  test::RunningExporter exporter(
      hwmon_exporter_args(root, "synthetic:pack:2 core:1 pu:1", "    interval_seconds: 0.1\n"));
  INFO(exporter.stderr_text());
  const auto first_at = std::chrono::steady_clock::now();
  const auto first = test::parse_exposition(exporter.get("/metrics").body);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const auto second_at = std::chrono::steady_clock::now();
  const auto response = exporter.get("/metrics");
  const auto second = test::parse_exposition(response.body);
  CHECK(test::value_of(second, "hwperf_rapl_energy_available") == 1);
  CHECK(test::find_samples(second, "hwperf_rapl_package_joules_total").size() == 2);
  const std::map<std::string, std::string> node = {{"chip", "ACPI000D:00"},
                                                   {"source", "integrated"}};
  const double grown = test::value_of(second, "hwperf_hwmon_node_joules_total", node) -
                       test::value_of(first, "hwperf_hwmon_node_joules_total", node);
  const double wall = std::chrono::duration<double>(second_at - first_at).count();
  CAPTURE(grown, wall);
  // Each scrape shows the total of the last tick before it: what grew in between is the power
  // times the time between those ticks, at most a tick more than the time between the scrapes.
  CHECK(grown > 0);
  CHECK(grown <= watts * (wall + interval) * 1.0001);
  promtool_accepts_hwmon(root, response.body);
  CHECK(exporter.stop() == 0);
}

TEST_CASE("on this machine, without a meter, the exporter says so and serves", "[hwmon][e2e]") {
  test::TempDir root;
  auto args = hwmon_exporter_args(root, "synthetic:pack:1 core:2 pu:1");
  args[1] = "--path.sysfs=/sys";  // this VM's own: no /sys/class/hwmon
  args.push_back("--once");
  const auto result = test::run_exporter(args);
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  const auto samples = test::parse_exposition(result.out);
  CHECK(test::value_of(samples, "hwperf_hwmon_energy_available") == 0);
  CHECK(test::value_of(samples, "hwperf_scrape_collector_success", {{"collector", "hwmon"}}) == 1);
  CHECK(result.err.find("hwmon: no power meter under /sys/class/hwmon") != std::string::npos);
}

TEST_CASE("collectors.hwmon keys are checked on loading", "[hwmon]") {
  CHECK(test::config_error("collectors:\n  hwmon:\n    interval_seconds: 0\n", "hwperf.yml")
            .find("hwperf.yml:3:23: collectors.hwmon.interval_seconds: expected 0.01 to 60 "
                  "seconds") != std::string::npos);
  CHECK(test::config_error("collectors:\n  hwmon:\n    stale_after_seconds: 0.5\n", "hwperf.yml")
            .find("collectors.hwmon.stale_after_seconds: expected 0 (never) or at least 1 "
                  "seconds") != std::string::npos);
  CHECK(test::config_error("collectors:\n  hwmon:\n    chips: [ina238]\n", "hwperf.yml")
            .find("hwperf.yml:3:5: unknown key \"chips\" in collectors.hwmon") !=
        std::string::npos);
  CHECK(test::config_error("collectors:\n  hwmon:\n    enabled: false\n    interval_seconds: 0.5\n"
                           "    stale_after_seconds: 0\n",
                           "hwperf.yml")
            .empty());
}
