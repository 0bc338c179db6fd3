// The uncore collector through the registry, in the real binary: --check-config on a Sapphire
// Rapids sysfs fixture (--path.sysfs) names the PMU, its events and the CPU each package is
// counted on, opening nothing; an unknown key under collectors.uncore is refused.
#include "tests/catch.hpp"

#include <string>

#include "tests/support.h"
#include "tests/unit/uncore_fixtures.h"

using namespace hwperf;
using namespace hwperf::test;

TEST_CASE("the binary's --check-config reports the uncore PMUs found per package", "[uncore]") {
  constexpr unsigned kCoresPerPackage = 56;
  TempDir root;
  uncore_fixture::write_spr_imc(root, 8, "0," + std::to_string(kCoresPerPackage));
  uncore_fixture::write_msr(root, true);
  const auto config = root.write(
      "hwperf.yml",
      "topology:\n  source: \"synthetic:pack:2 core:" + std::to_string(kCoresPerPackage) +
          " pu:1\"\ncollectors:\n  papi:\n    enabled: false\n  rapl:\n    enabled: "
          "false\n  uncore:\n    enabled: true\n");
  const auto result =
      run_exporter({"--config.file=" + config.string(),
                    "--path.sysfs=" + (root.path() / "sys").string(), "--check-config"});
  INFO(result.out << result.err);
  CHECK(result.exit_code == 0);
  const std::string report = result.out + result.err;
  CHECK(report.find("uncore: memory_read: uncore_imc, 8 box(es)") != std::string::npos);
  CHECK(report.find("package 0 on cpu 0; package 1 on cpu " + std::to_string(kCoresPerPackage)) !=
        std::string::npos);
  CHECK(report.find("uncore: msr_aperf: msr, every CPU") != std::string::npos);
  CHECK(report.find("uncore: resctrl: not counted (not_mounted)") != std::string::npos);
  CHECK(report.find("mount -t resctrl resctrl /sys/fs/resctrl") != std::string::npos);
}

TEST_CASE("an unknown key under collectors.uncore is a configuration error", "[uncore]") {
  const std::string message =
      config_error("collectors:\n  uncore:\n    enabled: true\n    peak: 1\n", "hwperf.yml");
  CHECK(message.find("hwperf.yml:4:5: unknown key \"peak\" in collectors.uncore") !=
        std::string::npos);
}
