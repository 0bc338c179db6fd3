// README.md's table of metric families against what the exporter exports (issue 37's follow-up:
// hwperf_memory_bytes_total was exported, and listed on the uncore page, but not in the table).
// tests/deploy/family_table.py checks every family a collector declares in its sources, and every
// family these runs export, against the table; the runs cover the names computed at run time:
// RAPL's powercap zones with an x86 node meter, Grace's socket meters, x86 and Arm uncore PMUs
// (counted through the fake backend: no kernel counts a fixture's PMU), a marked program's
// regions under -- CMD, and this machine's PAPI, process and cgroup collectors (the kernel's perf
// events, hence [kernel_perf]: scripts/arm64-test.sh leaves it out under qemu-user).
#include "tests/catch.hpp"

#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "collectors/exposition_text.h"
#include "collectors/uncore/uncore_collector.h"
#include "collectors/uncore/uncore_plan.h"
#include "tests/support/support.h"
#include "tests/support/hwmon_fixtures.h"
#include "tests/support/rapl_fixtures.h"
#include "tests/support/uncore_fixtures.h"

namespace hwperf::test::family_table {
namespace {

namespace rapl = rapl_fixture;
namespace uncore_trees = uncore_fixture;

struct FixtureRun {
  std::string name;        // the exposition's file name
  std::string exposition;  // as the exporter writes it
};

// The exporter's --once on a fixture root: `topology`, PAPI off and `collectors_yaml`; /sys, /dev
// and /proc under the root.
FixtureRun once_on(const TempDir& root, const std::string& name, const std::string& topology,
                   const std::string& collectors_yaml) {
  root.write("dev/.keep", "");
  root.write("proc/cpuinfo", rapl::cpuinfo("GenuineIntel", 6, 0x55));
  const auto config = root.write(
      "hwperf.yml", "topology:\n  source: \"" + topology +
                        "\"\ncollectors:\n  papi:\n    enabled: false\n" + collectors_yaml);
  const auto result = run_exporter({"--once", "--config.file=" + config.string(),
                                    "--path.sysfs=" + (root.path() / "sys").string(),
                                    "--path.devfs=" + (root.path() / "dev").string(),
                                    "--path.procfs=" + (root.path() / "proc").string()},
                                   60);
  INFO(name << ": " << result.err);
  REQUIRE(result.exit_code == 0);
  return {name, result.out};
}

// Two packages of RAPL's powercap zones (every domain) beside the x86 ACPI node meter.
FixtureRun x86_energy() {
  TempDir root;
  rapl::write_powercap_tree(root, rapl::two_package_zones());
  hwmon_fixture::write_power_meter_acpi(root, 300000000);
  return once_on(root, "x86_energy.prom", "synthetic:pack:2 core:1 pu:1",
                 "  hwmon:\n    enabled: true\n");
}

// A two-socket Grace's meters (socket, CPU rail, SoC rail), and a Grace Hopper module's.
FixtureRun grace_meters() {
  TempDir root;
  hwmon_fixture::write_grace(root, {0, 1}, 250000000);
  hwmon_fixture::write_acpi_meter(root, "hwmon9", "ACPI000D:09", 600000000,
                                  "Module Power Socket 0");
  return once_on(root, "grace_meters.prom", "xml:" + fixtures_dir() + "/hwmon/grace_two_socket.xml",
                 "  rapl:\n    enabled: false\n  hwmon:\n    enabled: true\n");
}

// The uncore collector on a fixture tree, through the fake backend, as a scrape serves it.
std::string uncore_exposition(const TempDir& root, const Topology& topology, double peak) {
  auto collector = uncore::make_uncore_collector(
      uncore::plan_uncore((root.path() / "sys").string(), topology),
      std::make_unique<uncore_trees::FakeBackend>(std::make_shared<uncore_trees::FakeState>()),
      (root.path() / "proc").string(), {}, peak);
  std::vector<prometheus::MetricFamily> constant;
  collect_constant(*collector, constant);
  std::string text = serialize(constant, ExpositionFormat::text_0_0_4);
  collect_text(*collector, text, ExpositionFormat::text_0_0_4);
  return text;
}

// A two-socket Sapphire Rapids (IMC reads and writes, APERF, MPERF, TSC, C-states, a configured
// peak) and a two-socket Altra (CMN meshes: reads and writes together).
std::vector<FixtureRun> uncore_servers() {
  TempDir x86;
  uncore_trees::write_spr_imc(x86, 2, "0,4");
  uncore_trees::write_msr(x86, true);
  uncore_trees::write_cstate(x86, "cstate_core", 30, "0,2,4,6", uncore_trees::kCoreCstates);
  uncore_trees::write_cstate(x86, "cstate_pkg", 31, "0,4", uncore_trees::kPackageCstates);
  TempDir arm;
  uncore_trees::write_arm_cmn(arm, 0, 50, "0", true);
  uncore_trees::write_arm_cmn(arm, 1, 51, "4", true);
  const Topology topology = synthetic_topology("pack:2 core:2 pu:2");
  return {{"uncore_sapphire_rapids.prom", uncore_exposition(x86, topology, 460.8e9)},
          {"uncore_altra.prom", uncore_exposition(arm, topology, 0)}};
}

// A PAPI_hl program's regions under -- CMD: the region families and the per-thread ones.
FixtureRun marked_regions(const TempDir& dir) {
  const auto output = dir.path() / "regions.prom";
  const auto result = run_exporter({"--once", "--experiment.regions", "--output=" + output.string(),
                                    "--", HWPERF_TEST_REGIONS_PROG, "2", "20", "10"},
                                   60);
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  return {"regions.prom", read_file(output)};
}

// This machine: PAPI with an event it may lack and a group, this test process as a target
// counting an event and a group, the cgroup collector.
FixtureRun this_machine(const TempDir& dir) {
  const auto config = dir.write("machine.yml",
                                "collectors:\n"
                                "  cgroup:\n"
                                "    enabled: true\n"
                                "  papi:\n"
                                "    events: [perf::PAGE-FAULTS, PAPI_TOT_INS]\n"
                                "    groups: [software]\n"
                                "  process:\n"
                                "    events: [perf::TASK-CLOCK]\n"
                                "    groups: [software]\n"
                                "    targets:\n"
                                "      - {name: tests, pid: " +
                                    std::to_string(::getpid()) + "}\n");
  const auto result = run_exporter({"--once", "--config.file=" + config.string()}, 60);
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  return {"this_machine.prom", result.out};
}

// What each run is there for: a family it must export, or the check would quietly cover less.
void check_run_exports(const std::vector<FixtureRun>& runs, const std::string& name,
                       const std::string& family) {
  for (const auto& run : runs) {
    if (run.name == name) {
      INFO(run.name << ":\n" << run.exposition);
      CHECK(run.exposition.find("# TYPE " + family + " ") != std::string::npos);
      return;
    }
  }
  FAIL("no run named " + name);
}

}  // namespace
}  // namespace hwperf::test::family_table

TEST_CASE(
    "every family the exporter exports is in the README's table of families or on its docs page",
    "[docs][e2e][kernel_perf]") {
  namespace here = hwperf::test::family_table;
  hwperf::test::TempDir dir;
  std::vector<here::FixtureRun> runs = here::uncore_servers();
  runs.push_back(here::x86_energy());
  runs.push_back(here::grace_meters());
  runs.push_back(here::marked_regions(dir));
  runs.push_back(here::this_machine(dir));
  for (const auto& [name, family] : std::vector<std::pair<std::string, std::string>>{
           {"uncore_sapphire_rapids.prom", "hwperf_memory_read_bytes_total"},
           {"uncore_sapphire_rapids.prom", "hwperf_cstate_package_residency_cycles_total"},
           {"uncore_sapphire_rapids.prom", "hwperf_msr_aperf_cycles_total"},
           {"uncore_sapphire_rapids.prom", "hwperf_memory_peak_bytes_per_second"},
           {"uncore_altra.prom", "hwperf_memory_bytes_total"},
           {"x86_energy.prom", "hwperf_rapl_psys_joules_total"},
           {"x86_energy.prom", "hwperf_hwmon_node_joules_total"},
           {"grace_meters.prom", "hwperf_hwmon_module_joules_total"},
           {"grace_meters.prom", "hwperf_hwmon_sysio_rail_joules_total"},
           {"regions.prom", "hwperf_region_thread_task_clock_seconds_total"},
           {"this_machine.prom", "hwperf_process_event_enabled_seconds_total"},
           {"this_machine.prom", "hwperf_cpu_group_running_seconds_total"},
       }) {
    CAPTURE(name, family);
    here::check_run_exports(runs, name, family);
  }
  std::string files;
  for (const auto& run : runs) files += " " + dir.write(run.name, run.exposition).string();
  const std::string source = HWPERF_SOURCE_DIR;
  int exit_code = -1;
  const std::string report = hwperf::test::run_shell(
      "python3 " + source + "/tests/deploy/family_table.py " + source + files, &exit_code);
  INFO(report);
  CHECK(exit_code == 0);
}
