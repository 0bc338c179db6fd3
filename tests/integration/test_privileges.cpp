// Dropping root in a child process (the test process itself keeps its privileges): the ids, no
// capabilities, and a descriptor opened before the drop that still reads.
#include "tests/catch.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <optional>
#include <thread>
#include <string>

#include "config/errors.h"
#include "exporter/privileges.h"
#include "tests/support/support.h"
#include "tests/support/rapl_fixtures.h"

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
          "[privileges][e2e][kernel_perf]") {
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

namespace {

// The exporter started by this test, as root or (with `as`) already switched to that user, its
// stderr in `log`, serving on 127.0.0.1:`port`. Stops it with SIGTERM on destruction.
class SpawnedExporter {
 public:
  SpawnedExporter(const std::vector<std::string>& args, const std::filesystem::path& log,
                  const RuntimeUser* as = nullptr) {
    std::vector<std::string> copies = args;
    std::string binary = test::exporter_binary();
    std::vector<char*> argv{binary.data()};
    for (auto& arg : copies) argv.push_back(arg.data());
    argv.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      const int err = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int in = open("/dev/null", O_RDONLY);
      dup2(in, 0);
      dup2(err, 1);
      dup2(err, 2);
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, nullptr);
      if (as != nullptr) {
        const gid_t groups[] = {as->gid};
        if (setgroups(1, groups) != 0 || setresgid(as->gid, as->gid, as->gid) != 0 ||
            setresuid(as->uid, as->uid, as->uid) != 0) {
          _exit(126);
        }
      }
      execv(argv[0], argv.data());
      _exit(127);
    }
  }
  ~SpawnedExporter() { stop(); }
  SpawnedExporter(const SpawnedExporter&) = delete;
  SpawnedExporter& operator=(const SpawnedExporter&) = delete;
  pid_t pid() const { return pid_; }
  bool running() {
    int status = 0;
    if (pid_ > 0 && waitpid(pid_, &status, WNOHANG) == pid_) {
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      pid_ = -1;
    }
    return pid_ > 0;
  }
  int stop() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      int status = 0;
      waitpid(pid_, &status, 0);
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      pid_ = -1;
    }
    return exit_code_;
  }

 private:
  pid_t pid_ = -1;
  int exit_code_ = -1;
};

unsigned free_port() {
  const UniqueFd socket(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (::bind(socket.get(), reinterpret_cast<sockaddr*>(&address), length) != 0 ||
      getsockname(socket.get(), reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    throw std::runtime_error("no free port");
  }
  return ntohs(address.sin_port);
}

// A config every user can read: PAPI on CPU 0 (owner threads; counting a CPU needs root here)
// or off, RAPL off.
std::filesystem::path readable_config(const test::TempDir& dir, bool papi = true,
                                      const std::string& more = "") {
  std::filesystem::permissions(dir.path(), std::filesystem::perms(0755));
  return dir.write(
      "hwperf.yml",
      (papi ? "collectors:\n  papi:\n    cpus: \"0\"\n    events: [perf::CPU-CLOCK]\n"
              "  rapl:\n    enabled: false\n"
            : "collectors:\n  papi:\n    enabled: false\n  rapl:\n    enabled: false\n") +
          more);
}

// The BPF engine's cases where it is built.
#ifdef HWPERF_HAVE_BPF
constexpr bool HWPERF_TEST_BPF = true;
#else
constexpr bool HWPERF_TEST_BPF = false;
#endif

}  // namespace

TEST_CASE("the runtime user nobody: every thread unprivileged, from the first request on",
          "[privileges][e2e][kernel_perf]") {
  if (geteuid() != 0) FAIL("this test needs root (as CI runs it): it starts the exporter as root");
  test::TempDir dir;
  // Also with containers counted by the BPF engine, loaded as root before the drop.
  const bool bpf = GENERATE(false, HWPERF_TEST_BPF);
  CAPTURE(bpf);
  const auto config = bpf ? readable_config(dir, true,
                                            "  cgroup:\n    enabled: true\n    mode: bpf\n"
                                            "    events: [perf::CPU-CLOCK]\n")
                          : readable_config(dir);
  const unsigned port = free_port();
  const auto log = dir.path() / "stderr";
  SpawnedExporter exporter(
      {"--config.file=" + config.string(), "--web.listen-address=127.0.0.1:" + std::to_string(port),
       "--runtime.user=nobody"},
      log);
  // Connect as early as the port exists (the kernel queues the connection from bind on), and
  // send the request at once: the answer must come from a thread that was never root, that is
  // after the drop was logged.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::optional<test::HttpResponse> first;
  std::string log_when_answered;
  while (!first && std::chrono::steady_clock::now() < deadline) {
    if (!exporter.running()) FAIL("the exporter exited:\n" + test::read_file(log));
    try {
      first = test::http_get(port, "/-/healthy");
      log_when_answered = test::read_file(log);
    } catch (const std::exception&) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  REQUIRE(first);
  INFO(log_when_answered);
  CHECK(first->status == 200);
  CHECK_THAT(log_when_answered, Catch::Contains("running as nobody"));

  const RuntimeUser nobody = resolve_runtime_user("nobody");
  const std::string uid = std::to_string(nobody.uid);
  const auto tasks = std::filesystem::path("/proc") / std::to_string(exporter.pid()) / "task";
  unsigned threads = 0;
  for (const auto& task : std::filesystem::directory_iterator(tasks)) {
    const std::string status = test::read_file(task.path() / "status");
    INFO(task.path().string() << " (" << status_field(status, "Name") << ")");
    CHECK(status_field(status, "Uid") == uid + "\t" + uid + "\t" + uid + "\t" + uid);
    CHECK(status_field(status, "CapEff") == "0000000000000000");
    CHECK(status_field(status, "CapPrm") == "0000000000000000");
    CHECK(status_field(status, "NoNewPrivs") == "1");
    ++threads;
  }
  // The main thread, a PAPI owner and CivetWeb's master and workers at the least.
  CHECK(threads >= 4);
  if (bpf) {
    // Unprivileged, a scrape still reads the engine through the descriptors it holds.
    const auto samples = test::parse_exposition(test::http_get(port, "/metrics").body);
    CHECK(test::value_of(samples, "hwperf_container_counting_mode",
                         {{"mode", "bpf"}, {"reason", "configured"}}) == 1);
    CHECK(test::value_of(samples, "hwperf_container_read_errors_total", {}) == 0);
  }
  CHECK(exporter.stop() == 0);
}

TEST_CASE("started as nobody with --runtime.user=nobody: serves, then exits 0 on SIGTERM",
          "[privileges][e2e][kernel_perf]") {
  if (geteuid() != 0) FAIL("this test needs root (as CI runs it): it switches a child to nobody");
  test::TempDir dir;
  const auto config = readable_config(dir, false);
  const unsigned port = free_port();
  const auto log = dir.path() / "stderr";
  const RuntimeUser nobody = resolve_runtime_user("nobody");
  SpawnedExporter exporter(
      {"--config.file=" + config.string(), "--web.listen-address=127.0.0.1:" + std::to_string(port),
       "--runtime.user=nobody"},
      log, &nobody);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::optional<test::HttpResponse> answer;
  while (!answer && std::chrono::steady_clock::now() < deadline && exporter.running()) {
    try {
      answer = test::http_get(port, "/metrics");
    } catch (const std::exception&) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  INFO(test::read_file(log));
  REQUIRE(answer);
  CHECK(answer->status == 200);
  CHECK(exporter.stop() == 0);
}

TEST_CASE("runtime.user=root says that every capability is kept",
          "[privileges][e2e][kernel_perf]") {
  if (geteuid() != 0) FAIL("this test needs root (as CI runs it): it starts the exporter as root");
  test::TempDir dir;
  const auto config = readable_config(dir);
  test::RunningExporter exporter({"--config.file=" + config.string(), "--runtime.user=root"});
  const std::string log = exporter.stderr_text();
  INFO(log);
  CHECK(exporter.get("/-/healthy").status == 200);
  CHECK_THAT(log, Catch::Contains("running as root (uid 0) with every capability"));
  CHECK_THAT(log, !Catch::Contains("no capabilities"));
  CHECK(exporter.stop() == 0);
}
