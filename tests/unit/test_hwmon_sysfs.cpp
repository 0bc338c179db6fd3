// The hwmon collector on fixture trees (tests/support/hwmon_fixtures.h): Grace's per-socket meters
// on packages 36 and 2364, X-Gene's rails, the x86 node meter, a machine with none, a hostile
// tree refused in bounded time, and sensors that disappear or turn into FIFOs while read.
#include "tests/catch.hpp"

#include <sys/stat.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "collectors/hwmon/hwmon_collector.h"
#include "collectors/hwmon/hwmon_engine.h"
#include "collectors/hwmon/hwmon_registration.h"
#include "common/text.h"
#include "tests/support/support.h"
#include "tests/support/hwmon_fixtures.h"

using namespace hwperf;
using namespace hwperf::hwmon;
using namespace hwperf::test::hwmon_fixture;
namespace fs = std::filesystem;

namespace {

std::string sysfs_of(const test::TempDir& root) { return (root.path() / "sys").string(); }

// A collector over what the survey of `root` finds, ticked by the test on a clock it moves.
struct SurveyedMeters {
  std::shared_ptr<HwmonEngine::Clock::time_point> now =
      std::make_shared<HwmonEngine::Clock::time_point>();
  Survey survey;
  HwmonEngine* engine = nullptr;
  std::unique_ptr<Collector> collector;

  SurveyedMeters(const test::TempDir& root, const Topology& topology)
      : survey(survey_meters(sysfs_of(root), topology)) {
    auto shared = now;
    auto made = std::make_unique<HwmonEngine>(make_sysfs_source(survey.discovery.sensors),
                                              EngineSettings{1, 300}, [shared] { return *shared; });
    engine = made.get();
    collector = make_hwmon_collector(std::move(made), false);
  }
  void tick_after(int seconds) {
    *now += std::chrono::seconds(seconds);
    engine->tick();
  }
  std::vector<test::Sample> scrape() { return test::scrape(*collector); }
};

bool any_line_has(const std::vector<std::string>& lines, const std::string& part) {
  for (const auto& line : lines) {
    if (line.find(part) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("Grace's per-socket meters carry the packages 36 and 2364", "[hwmon]") {
  test::TempDir root;
  // The firmware numbers its sockets 0 and 1; Linux's package ids are 36 and 2364.
  const std::vector<unsigned> firmware_sockets = {0, 1};
  write_grace(root, firmware_sockets, 250000000);
  const Topology topology = grace_topology();
  SurveyedMeters surveyed(root, topology);
  REQUIRE(surveyed.survey.discovery.sensors.size() == 6);
  CHECK(any_line_has(surveyed.survey.placement.notes, "package of rank N"));
  surveyed.tick_after(2);
  const auto samples = surveyed.scrape();
  const std::vector<unsigned> packages = topology.packages();
  for (std::size_t rank = 0; rank < packages.size(); ++rank) {
    const std::string package = std::to_string(packages[rank]);
    CAPTURE(package);
    for (const char* family :
         {"hwperf_hwmon_package_joules_total", "hwperf_hwmon_cpu_rail_joules_total",
          "hwperf_hwmon_sysio_rail_joules_total"}) {
      CAPTURE(family);
      CHECK(test::value_of(samples, family, {{"package", package}, {"source", "integrated"}}) ==
            Approx(250 * 2));
    }
  }
  // The socket's own meter is the "Grace Power Socket" one of rank 1, on ACPI000D:03.
  CHECK(test::find_samples(samples, "hwperf_hwmon_sensor_info",
                           {{"chip", "ACPI000D:03"},
                            {"label", "Grace Power Socket 1"},
                            {"kind", "package"},
                            {"package", std::to_string(packages[1])}})
            .size() == 1);
  for (const char* dense : {"0", "1"}) {
    CHECK(test::find_samples(samples, "hwperf_hwmon_package_joules_total", {{"package", dense}})
              .empty());
  }
  CHECK(test::find_samples(samples, "hwperf_hwmon_node_joules_total").empty());
  CHECK(test::value_of(samples, "hwperf_hwmon_average_interval_seconds",
                       {{"chip", "ACPI000D:00"}}) == Approx(0.05));
}

TEST_CASE("meters that name the package ids themselves are placed by id", "[hwmon]") {
  test::TempDir root;
  const Topology topology = grace_topology();
  write_grace(root, topology.packages(), 100000000);
  SurveyedMeters surveyed(root, topology);
  CHECK(surveyed.survey.placement.notes.empty());
  const auto samples = surveyed.scrape();
  for (unsigned package : topology.packages()) {
    CHECK(test::find_samples(samples, "hwperf_hwmon_cpu_rail_joules_total",
                             {{"package", std::to_string(package)}})
              .size() == 1);
  }
}

TEST_CASE("a meter naming a socket the topology does not have is refused", "[hwmon]") {
  test::TempDir root;
  write_grace(root, {0, 7}, 100000000);  // 7 is neither an id nor a rank of 2 packages
  SurveyedMeters surveyed(root, grace_topology());
  // Socket 0 is no id of this topology either, so nothing is taken by rank: by id, none match.
  CHECK(surveyed.survey.discovery.sensors.empty());
  CHECK(any_line_has(surveyed.survey.placement.refused, "names socket 7"));
  CHECK(any_line_has(describe_survey(surveyed.survey), "not exported: ACPI000D:03 power1"));
}

TEST_CASE("X-Gene's CPU and I/O rails belong to the package of their NUMA node", "[hwmon]") {
  test::TempDir root;
  write_xgene(root, 60000000, 20000000);
  SECTION("one package") {
    const Topology one = test::synthetic_topology("pack:1 core:2 pu:1");
    SurveyedMeters surveyed(root, one);
    surveyed.tick_after(1);
    const auto samples = surveyed.scrape();
    const std::string package = std::to_string(one.packages().front());
    CHECK(test::value_of(samples, "hwperf_hwmon_cpu_rail_joules_total",
                         {{"package", package}, {"chip", "APMC0D29:00"}}) == Approx(60));
    CHECK(test::value_of(samples, "hwperf_hwmon_sysio_rail_joules_total", {{"package", package}}) ==
          Approx(20));
  }
  SECTION("two packages: the device's numa_node decides, and without one nothing is guessed") {
    const Topology grace = grace_topology();
    SurveyedMeters unplaced(root, grace);
    CHECK(unplaced.survey.discovery.sensors.empty());
    CHECK(any_line_has(unplaced.survey.placement.refused, "no numa_node"));
    root.write("sys/devices/platform/APMC0D29:00/numa_node", "1\n");
    SurveyedMeters placed(root, grace);
    REQUIRE(placed.survey.discovery.sensors.size() == 2);
    const auto samples = placed.scrape();
    CHECK(test::find_samples(samples, "hwperf_hwmon_cpu_rail_joules_total", {{"package", "2364"}})
              .size() == 1);
  }
}

TEST_CASE("the x86 ACPI node meter is read from the ACPI device, other chips are left alone",
          "[hwmon]") {
  test::TempDir root;
  write_coretemp(root);
  const std::string attribute = write_power_meter_acpi(root, 180000000);
  SurveyedMeters surveyed(root, test::two_socket_topology());
  REQUIRE(surveyed.survey.discovery.sensors.size() == 1);
  const SensorSpec& spec = surveyed.survey.discovery.sensors.front().spec;
  CHECK(spec.path == sysfs_of(root) + "/class/hwmon/hwmon1/device/power1_average");
  CHECK(spec.chip == "ACPI000D:00");
  CHECK(any_line_has(surveyed.survey.discovery.chips, "hwmon0 (coretemp)"));
  surveyed.tick_after(1);
  set_value(root, attribute, 220000000);
  surveyed.tick_after(1);
  const auto samples = surveyed.scrape();
  CHECK(test::value_of(samples, "hwperf_hwmon_node_joules_total",
                       {{"chip", "ACPI000D:00"}, {"sensor", "power1"}, {"source", "integrated"}}) ==
        Approx(180 + (180 + 220) / 2.0));
  CHECK(test::value_of(samples, "hwperf_hwmon_energy_available") == 1);
  CHECK(test::value_of(samples, "hwperf_hwmon_interval_seconds") == 1);
}

TEST_CASE("two hwmon devices of one device are told apart by their class entry", "[hwmon]") {
  test::TempDir root;
  for (const char* hwmon : {"hwmon7", "hwmon8"}) {
    const Chip chip = add_chip(root, hwmon, "platform/APMC0D29:00");
    root.write(chip.hwmon + "/name", "apm_xgene\n");
    root.write(chip.hwmon + "/power1_label", "CPU power\n");
    root.write(chip.hwmon + "/power1_input", "1000000\n");
  }
  SurveyedMeters surveyed(root, test::synthetic_topology("pack:1 core:1 pu:1"));
  const auto samples = surveyed.scrape();
  for (const char* chip : {"APMC0D29:00/hwmon7", "APMC0D29:00/hwmon8"}) {
    CHECK(test::find_samples(samples, "hwperf_hwmon_cpu_rail_joules_total", {{"chip", chip}})
              .size() == 1);
  }
}

TEST_CASE("without hwmon meters the collector says so and exports nothing else", "[hwmon]") {
  test::TempDir root;
  root.write("sys/.keep", "");
  SurveyedMeters empty(root, test::two_socket_topology());
  auto samples = empty.scrape();
  CHECK(test::value_of(samples, "hwperf_hwmon_energy_available") == 0);
  CHECK(samples.size() == 1);
  CHECK(any_line_has(describe_survey(empty.survey),
                     "no power meter under " + sysfs_of(root) + "/class/hwmon (no hwmon chip)"));
  write_coretemp(root);
  SurveyedMeters coretemp(root, test::two_socket_topology());
  CHECK(any_line_has(describe_survey(coretemp.survey), "(chips: hwmon0 (coretemp))"));
}

TEST_CASE("a hostile hwmon tree is refused in bounded time and the real meter still read",
          "[hwmon]") {
  test::TempDir root;
  write_power_meter_acpi(root, 100000000);
  // A FIFO where a name is, and one where a reading is.
  const Chip fifo_name = add_chip(root, "hwmon2", "platform/fifo.0");
  REQUIRE(::mkfifo((root.path() / fifo_name.hwmon / "name").c_str(), 0600) == 0);
  const Chip fifo_reading = add_chip(root, "hwmon3", "platform/fifo.1");
  root.write(fifo_reading.hwmon + "/name", "apm_xgene\n");
  root.write(fifo_reading.hwmon + "/power1_label", "CPU power\n");
  REQUIRE(::mkfifo((root.path() / fifo_reading.hwmon / "power1_input").c_str(), 0600) == 0);
  // A class entry that is a link to itself, and a reading that is a link to a huge file.
  fs::create_directory_symlink("hwmon4", root.path() / kClass / "hwmon4");
  const std::string huge(8 << 20, '7');
  root.write("huge", huge);
  const Chip linked = add_chip(root, "hwmon5", "platform/APMC0D29:01");
  root.write(linked.hwmon + "/name", "apm_xgene\n");
  root.write(linked.hwmon + "/power1_label", "CPU power\n");
  fs::create_symlink(root.path() / "huge", root.path() / linked.hwmon / "power1_input");
  // A huge label, and a crowd of entries that are no chips.
  const Chip big_label = add_chip(root, "hwmon6", "LNXSYSTM:00/ACPI000D:09");
  root.write(big_label.device + "/name", "power_meter\n");
  root.write(big_label.device + "/power1_average", "5\n");
  root.write(big_label.device + "/power1_oem_info", huge);
  // A crowd of entries: a thousand that no chip is named like, a thousand chip names on files.
  for (int i = 0; i < 1000; ++i) root.write(std::string(kClass) + "zz" + std::to_string(i), "");
  for (int i = 1000; i < 2000; ++i) {
    root.write(std::string(kClass) + "hwmon" + std::to_string(i), "");
  }

  const auto started = std::chrono::steady_clock::now();
  SurveyedMeters surveyed(root, test::synthetic_topology("pack:1 core:1 pu:1"));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  CHECK(seconds < 5.0 * HWPERF_SLOWDOWN);
  const auto lines = describe_survey(surveyed.survey);
  INFO(join(lines, "\n"));
  REQUIRE(surveyed.survey.discovery.sensors.size() == 1);
  CHECK(surveyed.survey.discovery.sensors.front().spec.chip == "ACPI000D:00");
  const std::string chips = sysfs_of(root) + "/class/hwmon/";
  CHECK(any_line_has(lines, "refused: " + chips + "hwmon2/name: not a regular file"));
  CHECK(any_line_has(lines, "refused: " + chips + "hwmon3/power1_input: not a regular file"));
  CHECK(
      any_line_has(lines, "refused: " + chips + "hwmon4: a link where an attribute is, or a loop"));
  CHECK(
      any_line_has(lines, "refused: " + chips + "hwmon5/power1_input: a link where an attribute"));
  CHECK(any_line_has(lines, "refused: " + chips + "hwmon6/device/power1_oem_info: larger than"));
  CHECK(any_line_has(lines, "refused: " + chips + "hwmon1000: ENOTDIR"));
  // Only so many chips are looked at: the lowest numbered, the real meter among them.
  // Those with a name, and those refused as a whole ("<class>/hwmonN: why").
  std::size_t looked_at = surveyed.survey.discovery.chips.size();
  for (const auto& line : surveyed.survey.discovery.refused) {
    const auto entry = line.substr(0, line.find(": "));
    if (entry.rfind(chips + "hwmon", 0) == 0 &&
        entry.find('/', chips.size()) == std::string::npos) {
      ++looked_at;
    }
  }
  CHECK(looked_at == kMaxChipEntries);
}

TEST_CASE("a meter whose file disappears, turns into a FIFO or holds text recovers without a jump",
          "[hwmon]") {
  test::TempDir root;
  const std::string attribute = write_power_meter_acpi(root, 100000000);
  SurveyedMeters surveyed(root, test::two_socket_topology());
  const auto state = [&](const char* name) {
    return test::value_of(surveyed.scrape(), "hwperf_hwmon_sensor_state", {{"state", name}});
  };
  const auto joules = [&] {
    return test::value_of(surveyed.scrape(), "hwperf_hwmon_node_joules_total");
  };
  surveyed.tick_after(1);
  CHECK(joules() == Approx(100));
  fs::remove(root.path() / attribute);
  surveyed.tick_after(10);
  CHECK(state("gone") == 1);
  REQUIRE(::mkfifo((root.path() / attribute).c_str(), 0600) == 0);
  const auto started = std::chrono::steady_clock::now();
  surveyed.tick_after(10);  // would block forever on a FIFO opened without O_NONBLOCK
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(5 * HWPERF_SLOWDOWN));
  CHECK(state("garbage") == 1);
  fs::remove(root.path() / attribute);
  root.write(attribute, "not a number\n");
  surveyed.tick_after(10);
  CHECK(state("garbage") == 1);
  set_value(root, attribute, 300000000);
  surveyed.tick_after(10);
  CHECK(state("ok") == 1);
  CHECK(joules() == Approx(100));  // nothing for the 40 s it could not be read
  surveyed.tick_after(1);
  CHECK(joules() == Approx(100 + 300));
}

TEST_CASE("promtool accepts the hwmon collector's exposition", "[hwmon]") {
  if (!test::have_program("promtool"))
    FAIL("promtool not found: apt-get install prometheus (scripts/deps.sh does)");
  test::TempDir root;
  write_grace(root, {0, 1}, 250000000);
  write_power_meter_acpi(root, 600000000);
  SurveyedMeters surveyed(root, grace_topology());
  surveyed.tick_after(1);
  std::vector<prometheus::MetricFamily> constant;
  collect_constant(*surveyed.collector, constant);
  std::string text = serialize(constant, ExpositionFormat::text_0_0_4);
  collect_text(*surveyed.collector, text, ExpositionFormat::text_0_0_4);
  const auto file = root.write("hwmon.prom", text);
  int exit_code = -1;
  const std::string lint = test::run_shell("promtool check metrics < " + file.string(), &exit_code);
  INFO(text << lint);
  CHECK(exit_code == 0);
  CHECK(lint.empty());
}
