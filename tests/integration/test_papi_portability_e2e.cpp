// The real binary when PAPI cannot count: with Debian 12's own libpfm4 loaded instead of the
// one scripts/deps.sh installs, and with LIBPFM_FORCE_PMU naming no PMU (which disables PAPI's
// perf_event component on every machine), the default configuration still starts and serves
// topology and RAPL, and the log names libpfm4 and this CPU. Also what --check-config says a
// preset is counted as. Expectations come from PAPI's own tools and /proc/cpuinfo, run beside
// the exporter, never from the exporter's code.
#include "tests/catch.hpp"

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "tests/support/support.h"
#include "tests/support/rapl_fixtures.h"

using namespace hwperf;
namespace fs = std::filesystem;

namespace {

// Where scripts/deps.sh keeps Debian 12's libpfm.so.4 on Debian 12 machines.
const fs::path kDebian12Libpfm = HWPERF_DEBIAN12_LIBPFM_DIR;

std::string os_codename() {
  std::ifstream file("/etc/os-release");
  std::string line;
  while (std::getline(file, line)) {
    if (line.rfind("VERSION_CODENAME=", 0) == 0) return line.substr(17);
  }
  return "";
}

// Debian 12's libpfm4 where this is Debian 12 (the test fails if deps.sh did not keep it);
// elsewhere the system's own, which is what that machine runs.
test::Environment debian12_libpfm() {
  if (os_codename() != "bookworm") return {};
  if (!fs::exists(kDebian12Libpfm / "libpfm.so.4")) {
    FAIL("Debian 12's libpfm.so.4 is not in " << kDebian12Libpfm
                                              << ": run scripts/deps.sh, which keeps it there");
  }
  return {{"LD_LIBRARY_PATH", kDebian12Libpfm.string()}};
}

std::string command_output(const std::string& command) {
  std::string out;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return out;
  std::array<char, 4096> buffer{};
  while (fgets(buffer.data(), buffer.size(), pipe) != nullptr) out += buffer.data();
  pclose(pipe);
  return out;
}

std::string environment_prefix(const test::Environment& environment) {
  std::string prefix;
  for (const auto& [name, value] : environment) prefix += name + "='" + value + "' ";
  return prefix;
}

// "family 25 model 17", as the kernel reports the first CPU.
std::string cpuinfo_family_model() {
  std::ifstream file("/proc/cpuinfo");
  std::string line;
  std::string family;
  std::string model;
  const std::regex field(R"(^(cpu family|model)\s*:\s*(\d+)\s*$)");
  while (std::getline(file, line) && (family.empty() || model.empty())) {
    std::smatch match;
    if (!std::regex_match(line, match, field)) continue;
    (match[1] == "model" ? model : family) = match[2];
  }
  return "family " + family + " model " + model;
}

struct Served {
  std::vector<test::Sample> samples;
  std::string log;
};

// The default configuration (PAPI with its default events) over a RAPL powercap fixture.
Served serve_defaults(const test::Environment& environment) {
  test::TempDir dir;
  test::rapl_fixture::write_powercap_tree(dir, test::rapl_fixture::two_package_zones());
  test::RunningExporter exporter({"--path.sysfs=" + (dir.path() / "sys").string()}, environment);
  Served served{test::parse_exposition(exporter.get("/metrics").body), ""};
  CHECK(exporter.stop() == 0);
  served.log = exporter.stderr_text();
  return served;
}

void check_serves_topology_and_rapl(const Served& served) {
  using test::find_samples;
  using test::value_of;
  CHECK_FALSE(find_samples(served.samples, "hwperf_cpu_info").empty());
  for (const char* collector : {"topology", "papi", "rapl"}) {
    CAPTURE(collector);
    CHECK(value_of(served.samples, "hwperf_scrape_collector_success", {{"collector", collector}}) ==
          1);
  }
  CHECK(value_of(served.samples, "hwperf_rapl_energy_available") == 1);
  CHECK_FALSE(find_samples(served.samples, "hwperf_rapl_package_joules_total").empty());
}

}  // namespace

TEST_CASE(
    "PAPI unable to start: the default configuration serves topology and RAPL, and the "
    "log names libpfm4 and the CPU",
    "[papi][e2e][portability][kernel_perf]") {
  test::Environment environment = debian12_libpfm();
  // A PMU name no libpfm4 has: PAPI's perf_event component is disabled on any CPU.
  environment.emplace_back("LIBPFM_FORCE_PMU", "hwperf_no_such_pmu");
  const Served served = serve_defaults(environment);
  INFO(served.log);
  check_serves_topology_and_rapl(served);
  CHECK(test::value_of(served.samples, "hwperf_papi_available",
                       {{"reason", "forced_pmu_unknown"}}) == 0);
  CHECK(test::find_samples(served.samples, "hwperf_cpu_instructions_total").empty());
  CHECK_THAT(served.log, Catch::Contains("libpfm4 (") && Catch::Contains(cpuinfo_family_model()) &&
                             Catch::Contains("LIBPFM_FORCE_PMU=hwperf_no_such_pmu"));
  if (!environment.empty() && environment.front().first == "LD_LIBRARY_PATH") {
    // The library named is the one loaded, links resolved.
    const auto loaded = fs::canonical(kDebian12Libpfm / "libpfm.so.4").string();
    CHECK_THAT(served.log, Catch::Contains("libpfm4 (" + loaded + ")"));
  }
  // Running as root (CI does): permissions are not the cause, and the log must not say so.
  if (geteuid() == 0) CHECK_THAT(served.log, !Catch::Contains("perf_event_paranoid"));
}

TEST_CASE(
    "with Debian 12's libpfm4 the default configuration serves, counting where it knows the "
    "CPU and saying why not where it does not",
    "[papi][e2e][portability][x86]") {
  const test::Environment environment = debian12_libpfm();
  // papi_component_avail, with the same library, says whether perf_event starts on this CPU.
  const std::string components =
      command_output(environment_prefix(environment) + "papi_component_avail");
  REQUIRE_THAT(components, Catch::Contains("perf_event"));
  const bool unknown_cpu = components.find("libpfm4 no default PMU found") != std::string::npos ||
                           components.find("libpfm4 no PMUs found") != std::string::npos;
  CAPTURE(unknown_cpu);
  const Served served = serve_defaults(environment);
  INFO(served.log);
  check_serves_topology_and_rapl(served);
  if (unknown_cpu) {
    CHECK(test::value_of(served.samples, "hwperf_papi_available", {{"reason", "unknown_cpu"}}) ==
          0);
    CHECK_THAT(served.log, Catch::Contains("does not know this CPU") &&
                               Catch::Contains(cpuinfo_family_model()) &&
                               Catch::Contains("libpfm4 ("));
  } else {
    CHECK(test::value_of(served.samples, "hwperf_papi_available", {{"reason", "ok"}}) == 1);
    // The software events count without a hardware PMU, so the default set counts here.
    CHECK_FALSE(test::find_samples(served.samples, "hwperf_cpu_page_faults_total").empty());
  }
}

TEST_CASE("the check-config report says what a preset is counted as on this CPU",
          "[papi][e2e][portability][kernel_perf]") {
  // papi_avail -a lists only the presets PAPI defines for this CPU.
  const std::string available = command_output("papi_avail -a");
  REQUIRE_THAT(available, Catch::Contains("PAPI Preset Events"));
  const bool defined_here = std::regex_search(available, std::regex(R"(\bPAPI_TOT_INS\b)"));
  CAPTURE(defined_here);
  test::TempDir dir;
  const auto config = dir.write(
      "hwperf.yml", "collectors:\n  papi:\n    events: [PAPI_TOT_INS, perf::PAGE-FAULTS]\n");
  const auto result = test::run_exporter({"--config.file=" + config.string(), "--check-config"});
  INFO(result.out << result.err);
  CHECK(result.exit_code == 0);
  const std::string line_start = "# papi: PAPI_TOT_INS -> hwperf_cpu_instructions_total";
  CHECK_THAT(result.out, Catch::Contains(line_start));
  const bool substituted =
      result.out.find(line_start + " (counted as perf::INSTRUCTIONS") != std::string::npos;
  CHECK(substituted == !defined_here);
}
