// The real binary with PAPI: exit codes and messages for unknown and uncountable events and for
// missing permissions, --check-config, and the PAPI version reported.
#include "tests/support/papi_live_support.h"

#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <map>

#include "collectors/events/event_specs.h"
#include "collectors/papi/papi_factory.h"
#include "collectors/papi/papi_library.h"
#include "collectors/papi/papi_source.h"
#include "config/errors.h"
#include "exporter/exposition.h"

using namespace hwperf;
using namespace hwperf::test::papi_live;
using test::find_samples;
using test::parse_exposition;

TEST_CASE("the PAPI version reported is that of the libpapi loaded at runtime", "[papi]") {
  const std::string version = papi_library_version();
  CHECK_THAT(version, Catch::Matches("[0-9]+\\.[0-9]+\\.[0-9]+\\.[0-9]+"));
  // papi_avail (papi-tools, see scripts/deps.sh) prints the version of the same shared libpapi.
  FILE* pipe = popen("papi_avail 2>/dev/null", "r");
  REQUIRE(pipe != nullptr);
  std::string reported;
  char buffer[512];
  while (fgets(buffer, sizeof buffer, pipe) != nullptr) {
    const std::string line = buffer;
    if (line.rfind("PAPI version", 0) == 0 && line.find(':') != std::string::npos) {
      reported = line.substr(line.find(':') + 1);
      reported.erase(0, reported.find_first_not_of(" \t"));
      reported.erase(reported.find_last_not_of(" \t\r\n") + 1);
    }
  }
  pclose(pipe);
  if (reported.empty()) FAIL("papi_avail printed no \"PAPI version\" line: install papi-tools");
  CHECK(version == reported);
}

// ---- The exporter binary ---------------------------------------------------------------------

namespace {

std::string live_config_yaml(const std::string& events_yaml) {
  return "collectors:\n"
         "  rapl:\n"
         "    enabled: false\n"
         "  papi:\n"
         "    events:\n" +
         events_yaml;
}

}  // namespace

TEST_CASE("the binary exits 2 naming an unknown event", "[papi][e2e][kernel_perf]") {
  test::TempDir dir;
  const auto path = dir.write("hwperf.yml", live_config_yaml("      - perf::CPU-CLOCK\n"
                                                             "      - perf::NO-SUCH-EVENT\n"));
  const auto result = test::run_exporter({"--config.file=" + path.string(), "--once"});
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.err, Catch::Contains("perf::NO-SUCH-EVENT") &&
                             Catch::Contains(path.string() + ":7:") &&
                             Catch::Contains("papi_avail"));
}

TEST_CASE("the binary starts with an event it cannot count here, and says why",
          "[papi][e2e][kernel_perf]") {
  require_system_wide_perf();
  test::TempDir dir;
  const auto path = dir.write("hwperf.yml", live_config_yaml("      - perf::CPU-CLOCK\n"
                                                             "      - PAPI_TOT_INS\n"));
  const auto result = test::run_exporter({"--config.file=" + path.string(), "--once"});
  REQUIRE(result.exit_code == 0);
  const auto samples = parse_exposition(result.out);
  CHECK_FALSE(find_samples(samples, "hwperf_cpu_clock_seconds_total").empty());
  if (has_hardware_pmu()) {
    CHECK_FALSE(find_samples(samples, "hwperf_cpu_instructions_total").empty());
  } else {
    CHECK_THAT(result.err,
               Catch::Contains("PAPI_TOT_INS") && Catch::Contains("Event does not exist"));
    CHECK_FALSE(
        find_samples(samples, "hwperf_papi_event_dropped", {{"event", "PAPI_TOT_INS"}}).empty());
  }
}

TEST_CASE("the binary's --check-config reports per event whether PAPI can count it",
          "[papi][e2e][kernel_perf]") {
  require_system_wide_perf();
  test::TempDir dir;
  const auto path = dir.write("hwperf.yml", live_config_yaml("      - perf::PAGE-FAULTS\n"));
  const auto result = test::run_exporter({"--config.file=" + path.string(), "--check-config"});
  CHECK(result.exit_code == 0);
  CHECK_THAT(result.out, Catch::Contains("perf::PAGE-FAULTS -> hwperf_cpu_page_faults_total: "
                                         "countable on CPUs"));
}

TEST_CASE("without permission to count, the error names perf_event_paranoid and the remedies",
          "[papi][e2e][kernel_perf]") {
  if (geteuid() != 0) FAIL("this test drops to user nobody with setpriv and must run as root");
  if (std::system("command -v setpriv >/dev/null 2>&1") != 0) {
    FAIL("this test needs setpriv (util-linux) to run the exporter as user nobody");
  }
  test::TempDir dir;
  // The unprivileged exporter must be able to read its configuration.
  fs::permissions(dir.path(), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                  fs::perms::others_read | fs::perms::others_exec);
  const auto path = dir.write("hwperf.yml", live_config_yaml("      - perf::CPU-CLOCK\n"));
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                            fs::perms::others_read);
  // The remedy must quote perf_event_paranoid from --path.procfs (where a container mounts the
  // host's /proc), so the fixture holds a value this host's /proc does not.
  const std::string fixture_level = std::to_string(perf_event_paranoid() + 1);
  dir.write("procfs/sys/kernel/perf_event_paranoid", fixture_level + "\n");
  const std::string command = "setpriv --reuid=65534 --regid=65534 --clear-groups " +
                              test::exporter_binary() + " --config.file=" + path.string() +
                              " --path.procfs=" + (dir.path() / "procfs").string() +
                              " --once 2>&1 >/dev/null";
  std::string output;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buffer[4096];
  while (fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
  const int status = pclose(pipe);
  REQUIRE(WIFEXITED(status));
  CAPTURE(output);
  if (perf_event_paranoid() > 0) {
    CHECK(WEXITSTATUS(status) == 1);
    CHECK_THAT(output, Catch::Contains("perf::CPU-CLOCK") &&
                           Catch::Contains("kernel.perf_event_paranoid") &&
                           Catch::Contains("(it is " + fixture_level + " here)") &&
                           Catch::Contains("CAP_PERFMON") && Catch::Contains("--privileged") &&
                           Catch::Contains("seccomp"));
  } else {
    CHECK(WEXITSTATUS(status) == 0);  // paranoid <= 0 lets anyone count system-wide
  }
}

// ---- Real PMU only ---------------------------------------------------------------------------

namespace {

// More perf descriptors than a soft limit of 64 allows: 40 CPUs x 4 events.
constexpr unsigned kFdHungryCpus = 40;
const std::vector<std::string> kFdHungryEvents = {"perf::CPU-CLOCK", "perf::TASK-CLOCK",
                                                  "perf::PAGE-FAULTS", "perf::CONTEXT-SWITCHES"};

struct LimitedRun {
  int exit_code = -1;
  std::string out;  // the exposition (--once)
  std::string log;
};

// The binary once, with a configuration counting kFdHungryEvents on kFdHungryCpus synthetic
// CPUs, under `prlimit --nofile=soft:hard`.
LimitedRun run_fd_hungry(unsigned soft, unsigned hard) {
  test::TempDir dir;
  std::string events;
  for (const auto& event : kFdHungryEvents) events += "      - " + event + "\n";
  const auto path = dir.write("hwperf.yml", "topology:\n  source: \"synthetic:pack:1 core:" +
                                                std::to_string(kFdHungryCpus) + " pu:1\"\n" +
                                                live_config_yaml(events));
  const auto log = dir.path() / "stderr";
  const std::string command = "prlimit --nofile=" + std::to_string(soft) + ":" +
                              std::to_string(hard) + " " + test::exporter_binary() +
                              " --config.file=" + path.string() + " --once 2>" + log.string();
  LimitedRun run;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) FAIL("cannot run " << command);
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) run.out += buffer;
  const int status = ::pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.log = test::read_file(log);
  return run;
}

}  // namespace

TEST_CASE("an open-file limit too small for the counters is a startup error naming the remedy",
          "[papi][e2e][kernel_perf]") {
  // The process may hold 64 files, soft and hard: fewer than the perf descriptors alone.
  constexpr unsigned kLimit = 64;
  const std::size_t needed = kFdHungryCpus * kFdHungryEvents.size();
  REQUIRE(needed > kLimit);
  const LimitedRun run = run_fd_hungry(kLimit, kLimit);
  INFO(run.log);
  CHECK(run.exit_code == 1);
  CHECK_THAT(run.log,
             Catch::Contains("open-file limit (RLIMIT_NOFILE) is " + std::to_string(kLimit)) &&
                 Catch::Contains("PAPI: " + std::to_string(kFdHungryCpus) + " CPUs x " +
                                 std::to_string(kFdHungryEvents.size()) +
                                 " native events: " + std::to_string(needed)) &&
                 Catch::Contains("LimitNOFILE="));
}

TEST_CASE("a small soft open-file limit under a large hard one is raised, and every counter opens",
          "[papi][e2e][kernel_perf]") {
  // What systemd gives a service (soft 1024, hard 512K) in small: the soft limit alone is too
  // small for the perf descriptors the configuration needs, the hard one is not. The same
  // configuration exits 1 at 64:64 (above), so starting here means the soft limit was raised.
  constexpr unsigned kSoft = 64;
  constexpr unsigned kHard = 4096;
  const std::size_t needed = kFdHungryCpus * kFdHungryEvents.size();
  REQUIRE(needed > kSoft);
  REQUIRE(needed < kHard);
  const LimitedRun run = run_fd_hungry(kSoft, kHard);
  INFO(run.log);
  CHECK(run.exit_code == 0);
  CHECK_THAT(run.log, !Catch::Contains("RLIMIT_NOFILE"));
  // Every event counted on each of the synthetic CPUs this machine has; only those it lacks are
  // dropped, none as a PMU conflict.
  const auto cpus = live_topology().cpus();
  const auto here = static_cast<std::size_t>(
      std::count_if(cpus.begin(), cpus.end(), [](unsigned cpu) { return cpu < kFdHungryCpus; }));
  const auto samples = parse_exposition(run.out);
  for (const char* family :
       {"hwperf_cpu_clock_seconds_total", "hwperf_cpu_task_clock_seconds_total",
        "hwperf_cpu_page_faults_total", "hwperf_cpu_context_switches_total"}) {
    CAPTURE(family);
    CHECK(find_samples(samples, family).size() == here);
  }
  for (const auto& dropped : find_samples(samples, "hwperf_papi_event_dropped")) {
    CAPTURE(dropped.labels);
    CHECK(dropped.value == static_cast<double>(kFdHungryCpus - here));
  }
}

TEST_CASE(
    "check-config with ten thousand events reports every one at a cost that follows the "
    "distinct events",
    "[papi][e2e][kernel_perf]") {
  require_system_wide_perf();
  constexpr int kEvents = 10000;
  std::string yaml = "collectors:\n  papi:\n    events:\n";
  for (int i = 0; i < kEvents; ++i) {
    // Two distinct software events, each under many names: each is opened once per CPU.
    yaml += std::string("      - event: \"") +
            (i % 2 == 0 ? "perf::PAGE-FAULTS" : "perf::CPU-CLOCK") + "\"\n        metric: m" +
            std::to_string(i) + "\n";
  }
  test::TempDir dir;
  const auto path = dir.write("many.yml", yaml);
  // Before the fix this ran for minutes; the timeout turns a regression into a failure.
  const auto result = test::run_exporter({"--config.file=" + path.string(), "--check-config"}, 120);
  INFO(result.err.substr(0, 2000));
  REQUIRE(result.exit_code == 0);
  std::size_t reported = 0;
  for (std::size_t at = result.out.find("# papi: perf::"); at != std::string::npos;
       at = result.out.find("# papi: perf::", at + 1)) {
    ++reported;
  }
  CHECK(reported == static_cast<std::size_t>(kEvents));
  CHECK_THAT(result.out, Catch::Contains("hwperf_cpu_m9999_seconds_total: countable on CPUs"));
}
