// The HTTP server at the process's limits, in-process on 127.0.0.1:0: the connection budget under
// an open-file limit, running out of file descriptors (no spinning, one log line, recovery), and
// bind errors that name the address, the reason and the remedy.
#include "tests/catch.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/unique_fd.h"
#include "web/http_server.h"
#include "tests/support/http_clients.h"
#include "tests/support/support.h"

using namespace hwperf;
using test::closed_within;
using test::connect_to;
using namespace hwperf::test::http_clients;

TEST_CASE("connection budget under an open-file limit", "[http]") {
  CHECK_FALSE(fit_connections(128, 64, 1000).reduced);
  const auto fitted = fit_connections(128, 64, 20);
  CHECK(fitted.reduced);
  CHECK(fitted.worker_threads >= 1);
  CHECK(fitted.connection_queue >= 1);
  CHECK(fitted.worker_threads + fitted.connection_queue + 1 <= 20);
  CHECK(fit_connections(128, 64, 2).worker_threads == 0);
}

namespace {
long cpu_ticks(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  std::string field;
  long utime = 0;
  long stime = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14) utime = std::stol(field);
    if (i == 15) stime = std::stol(field);
  }
  return utime + stime;
}
}  // namespace

TEST_CASE("out of file descriptors: no spinning, one log line, recovery", "[http]") {
  const test::TempDir dir;
  const auto log_path = dir.path() / "stderr";
  int port_pipe[2];
  REQUIRE(pipe(port_pipe) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // The server alone in a process with 32 descriptors. Never returns into Catch.
    close(port_pipe[0]);
    const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    dup2(log_fd, STDERR_FILENO);
    close(log_fd);
    for (int fd = 3; fd < 1024; ++fd) {
      if (fd != port_pipe[1]) close(fd);
    }
    const rlimit limit{32, 32};
    if (setrlimit(RLIMIT_NOFILE, &limit) != 0) _exit(2);
    try {
      HttpServer server(test_options(), simple_handler());
      const unsigned port = server.port();
      if (::write(port_pipe[1], &port, sizeof port) != sizeof port) _exit(3);
      close(port_pipe[1]);
      while (true) pause();  // until the parent's SIGKILL
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s\n", e.what());
      _exit(4);
    }
  }
  close(port_pipe[1]);
  struct Reaper {
    pid_t pid;
    ~Reaper() {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  } reaper{child};
  unsigned port = 0;
  pollfd ready{port_pipe[0], POLLIN, 0};
  REQUIRE(poll(&ready, 1, 10000) == 1);
  const bool got_port = ::read(port_pipe[0], &port, sizeof port) == sizeof port;
  close(port_pipe[0]);
  INFO(test::read_file(log_path));
  REQUIRE(got_port);

  // 40 idle connections: more than 32 descriptors could hold.
  std::vector<UniqueFd> clients;
  for (int i = 0; i < 40; ++i) clients.push_back(connect_to(port));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const long ticks_before = cpu_ticks(child);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const double cpu_seconds = static_cast<double>(cpu_ticks(child) - ticks_before) /
                             static_cast<double>(sysconf(_SC_CLK_TCK));
  CHECK(cpu_seconds < 0.2);  // spinning on accept(2) takes a whole core

  const std::string log = test::read_file(log_path);
  CHECK(std::count(log.begin(), log.end(), '\n') == 1);
  CHECK_THAT(log, Catch::Contains("RLIMIT_NOFILE) is 32") && Catch::Contains("LimitNOFILE"));

  // The idle connections time out or close; the server answers again.
  clients.clear();
  const auto start = Clock::now();
  bool recovered = false;
  while (!recovered && seconds_since(start) < 10) {
    try {
      recovered = get(port, "/-/healthy").status == 200;
    } catch (const std::exception&) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  CHECK(recovered);
  CHECK(seconds_since(start) < 3.0);
}

TEST_CASE("bind errors name the address, the reason and the remedy", "[http]") {
  const HttpServer first(test_options(), simple_handler());
  const std::string taken = "127.0.0.1:" + std::to_string(first.port());
  try {
    HttpServerOptions options = test_options();
    options.listen_address = ListenAddress::parse(taken);
    HttpServer second(options, simple_handler());
    FAIL("second server bound an address already in use");
  } catch (const std::runtime_error& e) {
    const std::string message = e.what();
    CHECK_THAT(message, Catch::Contains("cannot listen on " + taken));
    CHECK_THAT(message, Catch::Contains("Address already in use"));
    CHECK_THAT(message, Catch::Contains("ss -ltnp"));
  }
  try {
    HttpServerOptions options = test_options();
    options.listen_address = ListenAddress::parse("192.0.2.1:0");  // TEST-NET-1: on no host
    HttpServer elsewhere(options, simple_handler());
    FAIL("bound an address of no interface");
  } catch (const std::runtime_error& e) {
    const std::string message = e.what();
    CHECK_THAT(message, Catch::Contains("cannot listen on 192.0.2.1:0"));
    CHECK_THAT(message, Catch::Contains("not an address of this host"));
  }
  const std::string denied = describe_bind_error(":80", EACCES);
  CHECK_THAT(denied, Catch::Contains(":80") && Catch::Contains("Permission denied") &&
                         Catch::Contains("CAP_NET_BIND_SERVICE"));
}
