// The real binary, end to end: --once, --check-config, serving, signals, promtool and a real
// Prometheus server scraping it.
#include "tests/catch.hpp"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <thread>

#include "tests/support/support.h"

using namespace hwperf;
namespace fs = std::filesystem;

namespace {

// A deterministic exporter: synthetic two-package topology, no PAPI (values vary run to run),
// RAPL pointed at empty trees (energy unavailable, as on this VM).
struct FixtureConfig {
  test::TempDir dir;
  std::string config_path;
  std::vector<std::string> args;
  explicit FixtureConfig(const std::string& extra_yaml = "") {
    dir.write("sys/.keep", "");
    dir.write("dev/.keep", "");
    dir.write("proc/cpuinfo",
              "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 85\n");
    config_path = dir.write("hwperf.yml",
                            "topology:\n"
                            "  source: \"synthetic:pack:2 l3:1(size=16MB) l2:2(size=1MB) "
                            "l1d:1(size=32KB) core:1 pu:2\"\n"
                            "collectors:\n"
                            "  papi:\n"
                            "    enabled: false\n" +
                                extra_yaml)
                      .string();
    args = {"--config.file=" + config_path, "--path.sysfs=" + (dir.path() / "sys").string(),
            "--path.devfs=" + (dir.path() / "dev").string(),
            "--path.procfs=" + (dir.path() / "proc").string()};
  }
};

// Values that legitimately change between runs are replaced, so the rest can be compared
// byte for byte with the golden file.
std::string normalise(const std::string& exposition) {
  std::string out = std::regex_replace(
      exposition, std::regex(R"((hwperf_scrape_collector_duration_seconds\{[^}]*\}) \S+)"),
      "$1 <duration>");
  out = std::regex_replace(out, std::regex(R"(revision="[^"]*")"), "revision=\"<revision>\"");
  out = std::regex_replace(out, std::regex(R"(version="[^"]*")"), "version=\"<version>\"");
  return out;
}

unsigned free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  socklen_t length = sizeof address;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  ::close(fd);
  return ntohs(address.sin_port);
}

}  // namespace

TEST_CASE("the exporter run with --once matches the golden file", "[e2e]") {
  FixtureConfig fixture;
  auto args = fixture.args;
  args.push_back("--once");
  const auto result = test::run_exporter(args);
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  const std::string golden_path = std::string(HWPERF_SOURCE_DIR) + "/tests/golden/once.prom";
  const std::string actual = normalise(result.out);
  if (std::getenv("HWPERF_UPDATE_GOLDEN")) {
    std::ofstream(golden_path) << actual;
    WARN("golden file rewritten: " + golden_path);
  }
  CHECK(actual == test::read_file(golden_path));
}

TEST_CASE("promtool accepts the exposition", "[e2e]") {
  if (!test::have_program("promtool"))
    FAIL("promtool not found: apt-get install prometheus (scripts/deps.sh does)");
  FixtureConfig fixture;
  auto args = fixture.args;
  args.push_back("--once");
  const auto result = test::run_exporter(args);
  REQUIRE(result.exit_code == 0);
  const auto file = fixture.dir.write("once.prom", result.out);
  int exit_code = -1;
  const std::string lint = test::run_shell("promtool check metrics < " + file.string(), &exit_code);
  INFO(lint);
  CHECK(exit_code == 0);
  CHECK(lint.empty());
}

TEST_CASE("the default configuration runs on this machine", "[e2e]") {
  // No config file at all: live topology, PAPI with its default events, RAPL as available.
  const auto result = test::run_exporter({"--once"}, 60);
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  const auto samples = test::parse_exposition(result.out);
  const unsigned cpus = std::thread::hardware_concurrency();
  CHECK(test::find_samples(samples, "hwperf_cpu_info").size() == cpus);
  CHECK(test::find_samples(samples, "hwperf_build_info").size() == 1);
  for (const char* collector : {"topology", "papi", "rapl"}) {
    CAPTURE(collector);
    CHECK(test::find_samples(samples, "hwperf_scrape_collector_success", {{"collector", collector}})
              .size() == 1);
  }
}

TEST_CASE("check-config prints the effective configuration, or exits 2 naming line and column",
          "[e2e]") {
  FixtureConfig good;
  auto ok = test::run_exporter({"--config.file=" + good.config_path, "--check-config"});
  INFO(ok.err);
  CHECK(ok.exit_code == 0);
  CHECK_THAT(ok.out, Catch::Contains("listen_address: \":9477\""));
  CHECK_THAT(ok.out, Catch::Contains("source: synthetic:pack:2"));
  CHECK_THAT(ok.out, Catch::Contains("# topology: "));

  test::TempDir dir;
  const auto bad = dir.write("bad.yml", "web:\n  listen_address: \":9477\"\n  tls: yes\n");
  const auto result = test::run_exporter({"--config.file=" + bad.string(), "--check-config"});
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.err, Catch::Contains(bad.string() + ":3:3: unknown key \\\"tls\\\" in web"));
  CHECK(result.out.empty());
}

TEST_CASE("bad flags exit 2 with one clear line", "[e2e]") {
  auto [flag, message] = GENERATE(table<std::string, std::string>({
      {"--no-such-flag", "unknown flag \\\"--no-such-flag\\\""},
      {"--web.listen-address=nonsense", "--web.listen-address=nonsense: no port"},
      {"--log.level=loud", "--log.level=loud: expected debug, info, warn or error"},
      {"--config.file=/nonexistent/hwperf.yml",
       "/nonexistent/hwperf.yml: cannot read the configuration file"},
  }));
  const auto result = test::run_exporter({flag});
  CAPTURE(flag, result.err);
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.err, Catch::Contains(message));
}

TEST_CASE("a listen address from the file that cannot be used names its line and column", "[e2e]") {
  test::TempDir dir;
  const auto bad = dir.write("bad.yml", "web:\n  listen_address: nonsense\n");
  const auto result = test::run_exporter({"--config.file=" + bad.string(), "--check-config"});
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.err,
             Catch::Contains(bad.string() + ":2:19: web.listen_address \\\"nonsense\\\": no port"));
}

TEST_CASE("SIGHUP and the user signals are logged and ignored; only SIGTERM stops", "[e2e]") {
  FixtureConfig fixture;
  test::RunningExporter exporter(fixture.args);
  for (int signal_number : {SIGHUP, SIGUSR1, SIGUSR2})
    REQUIRE(kill(exporter.pid(), signal_number) == 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (exporter.stderr_text().find("received SIGUSR2, ignored") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const std::string log = exporter.stderr_text();
  INFO(log);
  for (const char* name : {"SIGHUP", "SIGUSR1", "SIGUSR2"}) {
    CHECK_THAT(log, Catch::Contains(std::string("received ") + name + ", ignored"));
  }
  CHECK(exporter.get("/-/healthy").status == 200);
  CHECK(exporter.stop() == 0);
}

TEST_CASE("the help and version flags", "[e2e]") {
  const auto help = test::run_exporter({"--help"});
  CHECK(help.exit_code == 0);
  for (const char* flag :
       {"--config.file", "--web.listen-address", "--web.telemetry-path", "--path.sysfs",
        "--path.procfs", "--path.devfs", "--check-config", "--once", "--log.level", "--version"}) {
    CHECK_THAT(help.out, Catch::Contains(flag));
  }
  const auto version = test::run_exporter({"--version"});
  CHECK(version.exit_code == 0);
  CHECK_THAT(version.out, Catch::StartsWith("hwperf_exporter version "));
}

TEST_CASE("serves, survives a port clash, and stops within a second on SIGTERM", "[e2e]") {
  FixtureConfig fixture;
  test::RunningExporter exporter(fixture.args);
  const auto response = exporter.get("/metrics");
  CHECK(response.status == 200);
  CHECK_FALSE(test::find_samples(test::parse_exposition(response.body), "hwperf_cpu_info").empty());

  auto clash_args = fixture.args;
  clash_args.push_back("--web.listen-address=127.0.0.1:" + std::to_string(exporter.port()));
  const auto clash = test::run_exporter(clash_args);
  CHECK(clash.exit_code == 1);
  CHECK_THAT(clash.err,
             Catch::Contains("cannot listen on 127.0.0.1:" + std::to_string(exporter.port())));

  const auto start = std::chrono::steady_clock::now();
  CHECK(exporter.stop() == 0);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(1));
  CHECK_THAT(exporter.stderr_text(), Catch::Contains("received SIGTERM, shutting down"));
}

TEST_CASE("a real Prometheus server scrapes the exporter", "[e2e][prometheus]") {
  if (!test::have_program("prometheus"))
    FAIL("prometheus not found: apt-get install prometheus (scripts/deps.sh does)");
  // Plain HTTP, and HTTPS with basic authentication as node_exporter's users configure both.
  const bool secured = GENERATE(false, true);
  CAPTURE(secured);
  FixtureConfig fixture;
  auto args = fixture.args;
  std::string scrape_security;
  if (secured) {
    const auto certificates = test::make_test_certificates(fixture.dir);
    const auto web = fixture.dir.write(
        "web.yml", "tls_server_config:\n  cert_file: " + certificates.server_cert.string() +
                       "\n  key_file: " + certificates.server_key.string() +
                       "\nbasic_auth_users:\n  prometheus: " + test::bcrypt_hash("s3cret", 4) +
                       "\n");
    args.push_back("--web.config.file=" + web.string());
    scrape_security =
        "    scheme: https\n    tls_config:\n      ca_file: " + certificates.ca_cert.string() +
        "\n    basic_auth:\n      username: prometheus\n      password: s3cret\n";
  }
  test::RunningExporter exporter(args);
  const unsigned prometheus_port = free_port();
  const auto prometheus_config =
      fixture.dir.write("prometheus.yml",
                        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                        "scrape_configs:\n  - job_name: hwperf\n" +
                            scrape_security + "    static_configs:\n      - targets: ['127.0.0.1:" +
                            std::to_string(exporter.port()) + "']\n");
  const std::string data = (fixture.dir.path() / "tsdb").string();
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const std::string log = (fixture.dir.path() / "prometheus.log").string();
    freopen(log.c_str(), "w", stderr);
    freopen("/dev/null", "w", stdout);
    const std::string config_flag = "--config.file=" + prometheus_config.string();
    const std::string data_flag = "--storage.tsdb.path=" + data;
    const std::string listen_flag =
        "--web.listen-address=127.0.0.1:" + std::to_string(prometheus_port);
    execlp("prometheus", "prometheus", config_flag.c_str(), data_flag.c_str(), listen_flag.c_str(),
           static_cast<char*>(nullptr));
    _exit(127);
  }
  struct Reaper {
    pid_t pid;
    ~Reaper() {
      kill(pid, SIGTERM);
      waitpid(pid, nullptr, 0);
    }
  } reaper{pid};

  // Poll the query API until the target is up and our series are queryable (at most ~40 s).
  std::string up_body;
  std::string info_body;
  bool ready = false;
  for (int attempt = 0; attempt < 80 && !ready; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    try {
      up_body =
          test::http_get(prometheus_port, "/api/v1/query?query=up%7Bjob%3D%22hwperf%22%7D").body;
      info_body =
          test::http_get(prometheus_port, "/api/v1/query?query=count(hwperf_cpu_info)").body;
      ready = up_body.find("\"value\":[") != std::string::npos &&
              up_body.find("\"1\"]") != std::string::npos &&
              info_body.find("\"value\":[") != std::string::npos;
    } catch (const std::exception&) {
      // Prometheus is still starting.
    }
  }
  INFO("up: " << up_body);
  INFO("count(hwperf_cpu_info): " << info_body);
  INFO("prometheus log: " << test::read_file(fixture.dir.path() / "prometheus.log"));
  REQUIRE(ready);
  // The synthetic topology has 2 packages x 2 cores x 2 PUs.
  CHECK_THAT(info_body, Catch::Contains("\"8\"]"));
  const auto targets = test::http_get(prometheus_port, "/api/v1/targets").body;
  CHECK_THAT(targets, Catch::Contains("\"health\":\"up\""));
  CHECK_THAT(targets, Catch::Contains("\"lastError\":\"\""));
}

TEST_CASE(
    "SIGTERM stops within the keep-alive timeout with PAPI counting and an idle keep-alive "
    "connection",
    "[e2e]") {
  // The default configuration: PAPI counting on every CPU (owner threads on this VM).
  test::RunningExporter exporter({});
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(exporter.port()));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  const std::string request = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  REQUIRE(::send(fd, request.data(), request.size(), 0) == static_cast<ssize_t>(request.size()));
  std::string received;
  char buffer[65536];
  while (received.find("hwperf_build_info{") == std::string::npos) {
    const auto n = ::recv(fd, buffer, sizeof buffer, 0);
    REQUIRE(n > 0);
    received.append(buffer, static_cast<std::size_t>(n));
  }
  CHECK_THAT(received, Catch::StartsWith("HTTP/1.1 200"));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // now idle, kept alive

  const auto start = std::chrono::steady_clock::now();
  CHECK(exporter.stop() == 0);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  ::close(fd);
  CAPTURE(took.count());
  // CivetWeb lets the idle connection's worker finish its keep-alive wait (1 s by default, 0.8 s
  // of it left here); a hang would be far longer. The margin holds on a loaded machine under
  // sanitizers, where a clean clone once took 1.007 s.
  CHECK(took.count() < 2.0 * HWPERF_SLOWDOWN);
}

TEST_CASE("the HTTP limit flags reach the server", "[e2e][http]") {
  FixtureConfig fixture;
  auto args = fixture.args;
  args.insert(args.end(), {"--web.max-connections=3", "--web.max-requests=2",
                           "--web.request-timeout=1s", "--web.keep-alive-timeout=500ms"});
  test::RunningExporter exporter(args);
  CHECK_THAT(exporter.stderr_text(),
             Catch::Contains("HTTP: 3 connections served at once") &&
                 Catch::Contains("request deadline 1 s, keep-alive 0.5 s; 2 scrapes at once"));
  // A connection that sends nothing is closed at the 1 s deadline (the default is 5 s), checked
  // after each of CivetWeb's waits of the deadline itself.
  const auto idle = test::connect_to(exporter.port());
  const auto start = std::chrono::steady_clock::now();
  CHECK(test::closed_within(idle.get(), 4.0));
  CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() <
        1.0 + 1.5 * HWPERF_SLOWDOWN);
  CHECK(exporter.get("/-/healthy").status == 200);
}

TEST_CASE("the shipped Prometheus scrape configuration is valid", "[e2e]") {
  if (!test::have_program("promtool"))
    FAIL("promtool not found: apt-get install prometheus (scripts/deps.sh does)");
  int exit_code = -1;
  const std::string output = test::run_shell(
      "promtool check config " + std::string(HWPERF_SOURCE_DIR) + "/deploy/prometheus.yml",
      &exit_code);
  INFO(output);
  CHECK(exit_code == 0);
  CHECK_THAT(output, Catch::Contains("SUCCESS"));
}

TEST_CASE("the binary with a web config: 401 without credentials, 200 with them",
          "[e2e][web_config]") {
  FixtureConfig fixture;
  test::TempDir dir;
  const std::string password = "hunter2";
  const auto web =
      dir.write("web.yml", "basic_auth_users:\n  prom: " + test::bcrypt_hash(password, 4) + "\n");
  auto args = fixture.args;
  args.push_back("--web.config.file=" + web.string());
  test::RunningExporter exporter(args);
  CHECK(exporter.get("/metrics").status == 401);
  CHECK(
      exporter.get("/metrics", {{"Authorization", "Basic " + test::base64("prom:wrong")}}).status ==
      401);
  const auto allowed =
      exporter.get("/metrics", {{"Authorization", "Basic " + test::base64("prom:" + password)}});
  CHECK(allowed.status == 200);
  CHECK_FALSE(test::find_samples(test::parse_exposition(allowed.body), "hwperf_cpu_info").empty());
  CHECK(exporter.get("/-/healthy").status == 200);
  CHECK(exporter.stop() == 0);
}

TEST_CASE(
    "the binary with TLS and basic authentication: HTTPS only, 401 without the right "
    "credentials",
    "[e2e][web_config][tls]") {
  FixtureConfig fixture;
  test::TempDir dir;
  const auto certificates = test::make_test_certificates(dir);
  const std::string password = "correct horse";
  // Relative paths are taken from the web config's folder, as in exporter-toolkit.
  const auto web = dir.write("web.yml",
                             "tls_server_config:\n  cert_file: server.crt\n"
                             "  key_file: server.key\n  min_version: TLS12\n"
                             "basic_auth_users:\n  prom: " +
                                 test::bcrypt_hash(password, 5) + "\n");
  auto args = fixture.args;
  args.push_back("--web.config.file=" + web.string());
  test::RunningExporter exporter(args);
  const std::string base = "https://127.0.0.1:" + std::to_string(exporter.port());
  const std::vector<std::string> trust = {"--cacert", certificates.ca_cert.string()};
  const auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.begin(), trust.begin(), trust.end());
    return extra;
  };

  const auto allowed = test::curl(with({"--user", "prom:" + password}), base + "/metrics");
  INFO(allowed.error);
  CHECK(allowed.status == 200);
  CHECK_FALSE(test::find_samples(test::parse_exposition(allowed.body), "hwperf_cpu_info").empty());
  CHECK(test::curl(trust, base + "/metrics").status == 401);
  CHECK(test::curl(with({"--user", "prom:wrong"}), base + "/metrics").status == 401);
  CHECK(test::curl(with({"--user", "nobody:" + password}), base + "/metrics").status == 401);
  CHECK(test::curl(trust, base + "/-/healthy").status == 200);
  // No plain HTTP on the port.
  CHECK(
      test::curl({}, "http://127.0.0.1:" + std::to_string(exporter.port()) + "/-/healthy").status ==
      0);
  CHECK(exporter.stop() == 0);
  CHECK_THAT(exporter.stderr_text(), Catch::Contains("HTTPS only: TLS 1.2 or later, client "
                                                     "certificates: NoClientCert") &&
                                         Catch::Contains("basic authentication required"));
}

TEST_CASE("a TLS file that cannot be used is a configuration error naming it",
          "[e2e][web_config][tls]") {
  FixtureConfig fixture;
  test::TempDir dir;
  const auto certificates = test::make_test_certificates(dir);
  const auto not_a_certificate = dir.write("server.crt.txt", "certificate\n");
  const auto web =
      dir.write("web.yml", "tls_server_config:\n  cert_file: " + not_a_certificate.string() +
                               "\n  key_file: " + certificates.server_key.string() + "\n");
  auto args = fixture.args;
  args.push_back("--web.config.file=" + web.string());
  const auto refused = test::run_exporter(args);
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.err,
             Catch::Contains(web.string() + ": tls_server_config: cert_file " +
                             not_a_certificate.string() + " holds no usable PEM certificate"));
}

TEST_CASE("configurations that would kill or hang the exporter later are exit 2 at startup",
          "[e2e][kernel_perf]") {
  test::TempDir dir;
  const auto fifo = dir.path() / "topology.fifo";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  std::string huge_cpus;  // just under the 1 MiB configuration limit
  while (huge_cpus.size() < 1000000)
    huge_cpus += (huge_cpus.empty() ? "" : ",") + std::string("0-65535");
  const auto papi_event = [](const std::string& event) {
    return "collectors:\n  papi:\n    events:\n      - event: \"" + event + "\"\n";
  };
  const auto [name, yaml, message] = GENERATE_COPY(table<std::string, std::string, std::string>({
      {"period", papi_event("perf::PAGE-FAULTS:period=10000"), "sampling qualifier period=10000"},
      {"freq", papi_event("perf::CPU-CLOCK:freq=1"), "sampling qualifier freq=1"},
      {"cpus", "collectors:\n  papi:\n    cpus: \"" + huge_cpus + "\"\n", "collectors.papi.cpus"},
      {"fifo", "topology:\n  source: \"xml:FIFO\"\n", "not a regular file"},
      {"zero", "topology:\n  source: \"xml:/dev/zero\"\n", "not a regular file"},
  }));
  CAPTURE(name);
  // The generator's table outlives this run's TempDir: the FIFO's path goes in here.
  std::string text = yaml;
  if (const auto at = text.find("FIFO"); at != std::string::npos)
    text.replace(at, 4, fifo.string());
  const auto config = dir.write(name + ".yml", text);
  // Served, not only checked: the process must refuse to start rather than die or hang later.
  // A hang would end at the timeout and fail the exit code check.
  for (const char* mode : {"--check-config", "--web.listen-address=127.0.0.1:0"}) {
    CAPTURE(mode);
    const auto result = test::run_exporter({"--config.file=" + config.string(), mode}, 20);
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.err, Catch::Contains(message));
  }
}

TEST_CASE(
    "a basic auth user whose bcrypt cost would take hours per check is a startup error "
    "naming the file and the user",
    "[e2e][web_config]") {
  test::TempDir dir;
  std::string hash = test::bcrypt_hash("pw", 4);
  hash.replace(4, 2, "31");
  const auto web = dir.write("web.yml", "basic_auth_users:\n  slow: \"" + hash + "\"\n");
  const auto result = test::run_exporter(
      {"--web.listen-address=127.0.0.1:0", "--web.config.file=" + web.string()}, 60);
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.err, Catch::Contains(web.string() + ": basic_auth_users.slow: bcrypt cost 31"));
}
