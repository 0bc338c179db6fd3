// Dropping root in a child process (the test process itself keeps its privileges): the ids, no
// capabilities, and a descriptor opened before the drop that still reads.
#include "tests/catch.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <thread>
#include <string>

#include "config/errors.h"
#include "exporter/privileges.h"
#include "tests/support.h"
#include "tests/unit/test_rapl_fixtures.h"

using namespace hwperf;

namespace {

std::string status_field(const std::string& status, const std::string& field) {
  const auto at = status.find("\n" + field + ":");
  if (at == std::string::npos) return "";
  const auto start = status.find_first_not_of(" \t", at + field.size() + 2);
  return status.substr(start, status.find('\n', start) - start);
}

}  // namespace

TEST_CASE("dropping to nobody leaves no capabilities, and open descriptors keep reading",
          "[privileges]") {
  if (geteuid() != 0) FAIL("this test needs root (as CI runs it): it switches a child to nobody");
  const RuntimeUser nobody = resolve_runtime_user("nobody");
  REQUIRE(nobody.uid != 0);
  test::TempDir dir;
  const auto secret = dir.write("root-only", "42\n");
  REQUIRE(chmod(secret.c_str(), 0400) == 0);
  const auto report = dir.path() / "report";

  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // Opened as root, read after the drop: what every collector does. The report goes out through
    // a descriptor opened before the drop too, since nobody cannot create files here.
    const int fd = open(secret.c_str(), O_RDONLY);
    const int out = open(report.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    std::string result;
    try {
      drop_privileges(nobody);
      char buffer[8] = {};
      const bool read_ok = pread(fd, buffer, sizeof buffer - 1, 0) > 0;
      const bool reopen_fails = open(secret.c_str(), O_RDONLY) < 0;
      std::ifstream status_file("/proc/self/status");
      const std::string status((std::istreambuf_iterator<char>(status_file)), {});
      result = "uid=" + status_field(status, "Uid") + "\ncapeff=" + status_field(status, "CapEff") +
               "\ncapprm=" + status_field(status, "CapPrm") +
               "\nnonewprivs=" + status_field(status, "NoNewPrivs") +
               "\nread=" + (read_ok ? "yes" : "no") +
               "\nreopen_fails=" + (reopen_fails ? "yes" : "no") + "\nvalue=" + buffer;
    } catch (const std::exception& e) {
      result = std::string("error=") + e.what();
    }
    const bool written =
        write(out, result.data(), result.size()) == static_cast<ssize_t>(result.size());
    _exit(written ? 0 : 1);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  const std::string text = test::read_file(report);
  INFO(text);
  const std::string uid = std::to_string(nobody.uid);
  CHECK_THAT(text, Catch::Contains("uid=" + uid + "\t" + uid + "\t" + uid + "\t" + uid));
  CHECK_THAT(text, Catch::Contains("capeff=0000000000000000"));
  CHECK_THAT(text, Catch::Contains("capprm=0000000000000000"));
  CHECK_THAT(text, Catch::Contains("nonewprivs=1"));
  CHECK_THAT(text, Catch::Contains("read=yes"));
  CHECK_THAT(text, Catch::Contains("reopen_fails=yes"));
  CHECK_THAT(text, Catch::Contains("value=" + test::read_file(secret)));
}

TEST_CASE("an unknown runtime user is a configuration error naming it", "[privileges]") {
  const std::string name = "hwperf-no-such-user";
  try {
    resolve_runtime_user(name);
    FAIL("resolved a user that does not exist");
  } catch (const ConfigError& e) {
    CHECK_THAT(e.what(), Catch::Contains("--runtime.user=" + name + ": no such user"));
  }
  // A numeric uid with an entry resolves to that entry.
  CHECK(resolve_runtime_user("0").name == "root");
}

TEST_CASE("the runtime user nobody: no capabilities, and PAPI counts and RAPL energy still advance",
          "[privileges][e2e]") {
  if (geteuid() != 0) FAIL("this test needs root (as CI runs it): it starts the exporter as root");
  namespace fixture = hwperf::test::rapl_fixture;
  test::TempDir dir;
  auto zones = fixture::two_package_zones();
  fixture::write_powercap_tree(dir, zones);
  const auto config =
      dir.write("hwperf.yml",
                "collectors:\n  papi:\n    cpus: \"0\"\n    events: [perf::CPU-CLOCK]\n"
                "  rapl:\n    interface: powercap\n");
  test::RunningExporter exporter({"--config.file=" + config.string(),
                                  "--path.sysfs=" + (dir.path() / "sys").string(),
                                  "--runtime.user=nobody"});
  INFO(exporter.stderr_text());
  const std::string status = test::read_file("/proc/" + std::to_string(exporter.pid()) + "/status");
  const RuntimeUser nobody = resolve_runtime_user("nobody");
  const std::string uid = std::to_string(nobody.uid);
  CHECK(status_field(status, "Uid") == uid + "\t" + uid + "\t" + uid + "\t" + uid);
  CHECK(status_field(status, "CapEff") == "0000000000000000");
  CHECK(status_field(status, "CapPrm") == "0000000000000000");

  const auto before = test::parse_exposition(exporter.get("/metrics").body);
  // The package-0 zone (intel-rapl:1) gains a known amount of energy, rewritten in place.
  const std::uint64_t added_uj = 250000;
  fixture::set_energy(dir, "intel-rapl:1", zones[4].energy_uj + added_uj);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto after = test::parse_exposition(exporter.get("/metrics").body);
  const std::map<std::string, std::string> package0 = {{"package", "0"}};
  CHECK(test::value_of(after, "hwperf_rapl_package_joules_total", package0) -
            test::value_of(before, "hwperf_rapl_package_joules_total", package0) ==
        Approx(static_cast<double>(added_uj) / 1e6));
  const std::map<std::string, std::string> cpu0 = {{"cpu", "0"}};
  CHECK(test::value_of(after, "hwperf_cpu_clock_seconds_total", cpu0) >
        test::value_of(before, "hwperf_cpu_clock_seconds_total", cpu0));
  CHECK(exporter.stop() == 0);
}
