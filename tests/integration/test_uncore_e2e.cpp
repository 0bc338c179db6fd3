// The uncore collector through the registry, in the real binary: --check-config on a Sapphire
// Rapids sysfs fixture (--path.sysfs) names the PMU, its events and the CPU each package is
// counted on, opening nothing; an unknown key under collectors.uncore is refused; with no
// configuration it counts what this machine and the exporter's privileges allow, and reports the
// rest once.
#include "tests/catch.hpp"

#include <unistd.h>

#include <filesystem>
#include <string>

#include "tests/support/papi_live_support.h"
#include "tests/support/support.h"
#include "tests/support/uncore_fixtures.h"

using namespace hwperf;
using namespace hwperf::test;

namespace {

// The msr PMU's tsc event, which every x86 kernel with CONFIG_PERF_EVENTS_MSR offers, VMs included.
bool machine_has_msr_tsc() {
  return std::filesystem::exists("/sys/bus/event_source/devices/msr/events/tsc");
}

// Each source the collector does not count is logged once, with its reason.
void check_each_source_reported_once(const std::vector<Sample>& samples, const std::string& log) {
  const auto sources = find_samples(samples, "hwperf_uncore_source_available");
  REQUIRE_FALSE(sources.empty());
  for (const auto& source : sources) {
    CAPTURE(source.labels);
    const std::string line = "uncore: not counting " + source.labels.at("source") + " (" +
                             source.labels.at("reason") + ")";
    CHECK(occurrences(log, line) == (source.value == 1 ? 0 : 1));
  }
}

}  // namespace

TEST_CASE("with no configuration, the uncore collector counts what this machine offers",
          "[uncore][e2e][kernel_perf]") {
  const auto result = run_exporter({"--once"}, 60);
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  const auto samples = parse_exposition(result.out);
  CHECK(value_of(samples, "hwperf_scrape_collector_success", {{"collector", "uncore"}}) == 1);
  check_each_source_reported_once(samples, result.err);
  // Where the kernel offers the tsc event and the exporter may count system-wide, every CPU's.
  const bool countable =
      machine_has_msr_tsc() && (geteuid() == 0 || papi_live::perf_event_paranoid() <= 0);
  CHECK(value_of(samples, "hwperf_uncore_source_available", {{"source", "msr_tsc"}}) ==
        (countable ? 1 : 0));
  CHECK(find_samples(samples, "hwperf_msr_tsc_cycles_total").size() ==
        (countable ? find_samples(samples, "hwperf_cpu_info").size() : 0));
}

TEST_CASE(
    "as an ordinary user, the default uncore collector says what it may not count and the "
    "exporter serves on",
    "[uncore][e2e][privileges][kernel_perf]") {
  if (geteuid() != 0)
    FAIL("this test needs root (as CI runs it): it runs the exporter as uid 65534");
  TempDir dir;  // the binary where uid 65534 can reach it
  std::filesystem::permissions(dir.path(), std::filesystem::perms(0755));
  const auto binary = dir.path() / "hwperf_exporter";
  std::filesystem::copy_file(exporter_binary(), binary);
  const auto log = dir.path() / "stderr";
  int exit_code = -1;
  const std::string out = run_shell(
      "(cd / && setpriv --reuid=65534 --regid=65534 --clear-groups "
      "--inh-caps=-all " +
          binary.string() + " --once 2>" + log.string() + ")",
      &exit_code);
  const std::string err = read_file(log);
  INFO(err);
  REQUIRE(exit_code == 0);
  const auto samples = parse_exposition(out);
  check_each_source_reported_once(samples, err);
  if (!machine_has_msr_tsc()) {
    WARN("this kernel offers no msr/tsc event: only that each source is reported was checked");
    return;
  }
  const bool refused = papi_live::perf_event_paranoid() > 0;
  CHECK(find_samples(samples, "hwperf_uncore_source_available",
                     {{"source", "msr_tsc"}, {"reason", refused ? "permission_denied" : "ok"}})
            .size() == 1);
  if (refused) {
    CHECK(occurrences(err, "uncore: not counting msr_tsc (permission_denied)") == 1);
    CHECK_THAT(err, Catch::Contains("kernel.perf_event_paranoid <= 0"));
  }
}

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
