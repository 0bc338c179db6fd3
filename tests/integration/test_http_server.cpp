// The HTTP server under hostile and heavy clients, over loopback sockets: deadlines, keep-alive
// latency, the concurrency limit, the open-file limit and bind errors. Servers run in-process on
// 127.0.0.1:0 with small deadlines so that every test stays within a few seconds; timings are only
// asserted as generous bounds.
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
#include "tests/support.h"

using namespace hwperf;
using Clock = std::chrono::steady_clock;
using test::closed_within;
using test::connect_to;

namespace {

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

HttpServerOptions test_options() {
  HttpServerOptions options;
  options.listen_address = ListenAddress::parse("127.0.0.1:0");
  options.request_timeout_ms = 1000;
  options.keep_alive_timeout_ms = 500;
  return options;
}

HttpResponse text(std::string body) {
  return HttpResponse{200, "text/plain; charset=utf-8", {}, std::move(body)};
}

// /metrics answers `metrics_body`, anything else "ok".
HttpHandler simple_handler(std::string metrics_body = "metric 1\n") {
  return [body = std::move(metrics_body)](const HttpRequest& request) {
    return text(request.path == "/metrics" ? body : "ok\n");
  };
}

void send_all(int fd, const std::string& data) {
  std::size_t sent = 0;
  while (sent < data.size()) {
    const auto n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) throw std::runtime_error(std::string("send: ") + std::strerror(errno));
    sent += static_cast<std::size_t>(n);
  }
}

struct Reply {
  int status = 0;
  std::string body;
  bool closed = false;  // the server said Connection: close
};

// Reads one response (Content-Length framed) from a connection; throws on timeout or EOF.
Reply read_reply(int fd, std::string& buffer) {
  while (buffer.find("\r\n\r\n") == std::string::npos) {
    char chunk[65536];
    const auto n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0) throw std::runtime_error("connection closed or timed out before a response");
    buffer.append(chunk, static_cast<std::size_t>(n));
  }
  const auto head_end = buffer.find("\r\n\r\n") + 4;
  const std::string head = buffer.substr(0, head_end);
  std::string lower = head;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const auto length_at = lower.find("content-length:");
  const std::size_t length =
      length_at == std::string::npos ? 0 : std::stoul(head.substr(length_at + 15));
  while (buffer.size() < head_end + length) {
    char chunk[65536];
    const auto n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0) throw std::runtime_error("connection closed or timed out within a response");
    buffer.append(chunk, static_cast<std::size_t>(n));
  }
  Reply reply;
  reply.status = std::stoi(head.substr(9, 3));
  reply.body = buffer.substr(head_end, length);
  reply.closed = lower.find("connection: close") != std::string::npos;
  buffer.erase(0, head_end + length);
  return reply;
}

// One GET on a fresh connection; the connection's timeouts bound it at 5 s.
Reply get(unsigned port, const std::string& path) {
  const UniqueFd socket = connect_to(port);
  send_all(socket.get(),
           "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  std::string buffer;
  return read_reply(socket.get(), buffer);
}

// Waits until the server serves no connection; returns how long that took (or nullopt).
std::optional<double> until_no_busy_worker(const HttpServer& server, double limit_seconds) {
  const auto start = Clock::now();
  while (seconds_since(start) < limit_seconds) {
    if (server.busy_workers() == 0) return seconds_since(start);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return std::nullopt;
}

bool wait_for(const std::function<bool()>& condition, double limit_seconds) {
  const auto start = Clock::now();
  while (seconds_since(start) < limit_seconds) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return condition();
}

constexpr int kAttackers = 64;

// "Within 1 s" as the issue asks, for the plain build; a sanitizer build runs every request
// several times slower (HWPERF_SLOWDOWN, set by tests/CMakeLists.txt).
constexpr double kAnswerWithinSeconds = 1.0 * HWPERF_SLOWDOWN;

// While `attackers` hold their connections, a scrape and /-/healthy answer within 1 s.
void check_served_despite(const HttpServer& server) {
  for (const char* path : {"/metrics", "/-/healthy"}) {
    CAPTURE(path);
    const auto start = Clock::now();
    const Reply reply = get(server.port(), path);
    CHECK(reply.status == 200);
    CHECK(seconds_since(start) < kAnswerWithinSeconds);
  }
}

}  // namespace

TEST_CASE("idle connections are dropped at the request deadline and starve no one", "[http]") {
  const HttpServerOptions options = test_options();
  HttpServer server(options, simple_handler());
  std::vector<UniqueFd> attackers;
  for (int i = 0; i < kAttackers; ++i) attackers.push_back(connect_to(server.port()));
  const auto start = Clock::now();
  REQUIRE(wait_for([&] { return server.busy_workers() >= kAttackers; }, 2.0));
  check_served_despite(server);
  const auto dropped = until_no_busy_worker(server, 10.0);
  REQUIRE(dropped);
  // CivetWeb checks the deadline after each poll of the socket, which waits the deadline itself.
  CHECK(seconds_since(start) < options.request_timeout_ms / 1000.0 + 1.5);
  CHECK(closed_within(attackers.front().get(), 1.0));
}

TEST_CASE("half-sent request heads are dropped at the request deadline", "[http]") {
  const HttpServerOptions options = test_options();
  HttpServer server(options, simple_handler());
  std::vector<UniqueFd> attackers;
  for (int i = 0; i < kAttackers; ++i) {
    attackers.push_back(connect_to(server.port()));
    send_all(attackers.back().get(), "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ");
  }
  const auto start = Clock::now();
  REQUIRE(wait_for([&] { return server.busy_workers() >= kAttackers; }, 2.0));
  check_served_despite(server);
  // One more byte half-way: the deadline counts from the start of the request, not the last byte.
  std::this_thread::sleep_for(std::chrono::milliseconds(options.request_timeout_ms / 2));
  for (auto& attacker : attackers) send_all(attacker.get(), "x");
  REQUIRE(until_no_busy_worker(server, 10.0));
  CHECK(seconds_since(start) < options.request_timeout_ms / 1000.0 + 1.5);
  CHECK(closed_within(attackers.front().get(), 1.0));
}

TEST_CASE("TLS handshakes that never finish are dropped at the request deadline", "[http][tls]") {
  test::TempDir dir;
  const auto certificates = test::make_test_certificates(dir);
  HttpServerOptions options = test_options();
  TlsServerConfig tls;
  tls.cert_file = certificates.server_cert.string();
  tls.key_file = certificates.server_key.string();
  options.tls = tls;
  HttpServer server(options, simple_handler());
  // Half say nothing; half send the start of a TLS record (a ClientHello's header) and stop.
  std::vector<UniqueFd> attackers;
  for (int i = 0; i < kAttackers; ++i) {
    attackers.push_back(connect_to(server.port()));
    if (i % 2 == 1) send_all(attackers.back().get(), std::string("\x16\x03\x01\x02\x00\x01", 6));
  }
  const auto start = Clock::now();
  for (const char* path : {"/metrics", "/-/healthy"}) {
    CAPTURE(path);
    const auto asked = Clock::now();
    const auto result = test::curl({"--cacert", certificates.ca_cert.string()},
                                   "https://127.0.0.1:" + std::to_string(server.port()) + path);
    INFO(result.error);
    CHECK(result.status == 200);
    // curl is a process of its own: its start is part of the time.
    CHECK(seconds_since(asked) < kAnswerWithinSeconds);
  }
  // CivetWeb gives the handshake request_timeout_ms, polling every 50 ms.
  for (auto& attacker : attackers) {
    CHECK(closed_within(attacker.get(),
                        options.request_timeout_ms / 1000.0 + 1.5 - seconds_since(start)));
  }
}

TEST_CASE("failed TLS handshakes leave the count of busy workers right", "[http][tls]") {
  test::TempDir dir;
  const auto certificates = test::make_test_certificates(dir);
  HttpServerOptions options = test_options();
  options.worker_threads = 8;
  TlsServerConfig tls;
  tls.cert_file = certificates.server_cert.string();
  tls.key_file = certificates.server_key.string();
  options.tls = tls;
  HttpServer server(options, simple_handler());
  const std::string https = "https://127.0.0.1:" + std::to_string(server.port()) + "/metrics";
  // A served connection is counted while it lasts, and only then.
  const auto served = test::curl({"--cacert", certificates.ca_cert.string()}, https);
  REQUIRE(served.status == 200);
  REQUIRE(wait_for([&] { return server.busy_workers() == 0; }, 2.0));
  // Each failed handshake closes a connection that was never counted; were it uncounted all the
  // same, the count would go below zero and every keep-alive response would be cut short
  // ("workers scarce").
  for (int i = 0; i < 12; ++i) {
    const auto refused = test::curl({"--cacert", certificates.rogue_cert.string()}, https);
    CHECK(refused.status == 0);
  }
  const auto headers = dir.path() / "headers";
  const auto kept = test::curl(
      {"--cacert", certificates.ca_cert.string(), "--dump-header", headers.string()}, https);
  REQUIRE(kept.status == 200);
  std::string head = test::read_file(headers);
  for (char& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  CHECK_THAT(head, Catch::Contains("connection: keep-alive"));
}

TEST_CASE("request bodies are refused unread and the connection closed", "[http]") {
  HttpServer server(test_options(), simple_handler());
  std::vector<UniqueFd> attackers;
  for (int i = 0; i < kAttackers; ++i) {
    attackers.push_back(connect_to(server.port()));
    send_all(attackers.back().get(),
             "POST /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000000\r\n\r\nabc");
  }
  const auto start = Clock::now();
  check_served_despite(server);
  // All but the first trickle their bodies, which would hold a worker for ever if CivetWeb read
  // them: each piece restarts its read timeout.
  while (server.busy_workers() > 0 && seconds_since(start) < 5.0) {
    for (std::size_t i = 1; i < attackers.size(); ++i) {
      ::send(attackers[i].get(), "x", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  // Answered at once, without waiting for the body.
  CHECK(server.busy_workers() == 0);
  CHECK(seconds_since(start) < 1.5);
  std::string buffer;
  const Reply reply = read_reply(attackers.front().get(), buffer);
  CHECK(reply.status == 413);
  CHECK(reply.closed);
  for (auto& attacker : attackers) CHECK(closed_within(attacker.get(), 1.0));
}

TEST_CASE("a client that pipelines requests and never reads loses its connection", "[http]") {
  const HttpServerOptions options = test_options();
  // Responses far larger than the socket buffers, so that writing them blocks.
  HttpServer server(options, simple_handler(std::string(256 * 1024, 'x')));
  std::string pipelined;
  for (int i = 0; i < 20; ++i) pipelined += "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  std::vector<UniqueFd> attackers;
  for (int i = 0; i < kAttackers; ++i) {
    attackers.push_back(connect_to(server.port(), 4096));
    send_all(attackers.back().get(), pipelined);
  }
  const auto start = Clock::now();
  REQUIRE(wait_for([&] { return server.busy_workers() >= kAttackers; }, 2.0));
  check_served_despite(server);
  // A write that makes no progress fails after request_timeout_ms, rounded up to CivetWeb's 2 s
  // poll quantum; then the connection closes instead of answering the next pipelined request.
  const double write_deadline = std::max(2.0, options.request_timeout_ms / 1000.0);
  // Without that, each of the 20 requests would hold the worker for the write deadline again.
  REQUIRE(until_no_busy_worker(server, 15.0));
  CHECK(seconds_since(start) < write_deadline + 3.0);
}

TEST_CASE("keep-alive requests are not delayed by Nagle and delayed ACKs", "[http]") {
  HttpServer server(test_options(), simple_handler(std::string(2000, 'x')));
  const UniqueFd socket = connect_to(server.port());
  std::string buffer;
  std::vector<double> milliseconds;
  for (int i = 0; i < 100; ++i) {
    const auto start = Clock::now();
    send_all(socket.get(), "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    const Reply reply = read_reply(socket.get(), buffer);
    milliseconds.push_back(seconds_since(start) * 1000);
    REQUIRE(reply.status == 200);
    REQUIRE_FALSE(reply.closed);
  }
  std::sort(milliseconds.begin(), milliseconds.end());
  CAPTURE(milliseconds[50], milliseconds[99]);
  // Nagle meeting the delayed ACK costs ~40 ms on nearly every request; a busy 2-core machine may
  // stall a few requests for other reasons, so only the median and the count of slow ones count.
  CHECK(milliseconds[50] < 5.0);
  CHECK(std::count_if(milliseconds.begin(), milliseconds.end(),
                      [](double ms) { return ms >= 30; }) < 5);
}

TEST_CASE("keep-alive connections are closed after a response when workers are scarce", "[http]") {
  HttpServerOptions options = test_options();
  options.worker_threads = 4;
  HttpServer server(options, simple_handler());
  // Three idle connections hold three of the four workers.
  std::vector<UniqueFd> idle;
  for (int i = 0; i < 3; ++i) idle.push_back(connect_to(server.port()));
  REQUIRE(wait_for([&] { return server.busy_workers() >= 3; }, 2.0));
  const UniqueFd socket = connect_to(server.port());
  send_all(socket.get(), "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  std::string buffer;
  const Reply reply = read_reply(socket.get(), buffer);
  CHECK(reply.status == 200);
  CHECK(reply.closed);
  CHECK(closed_within(socket.get(), 1.0));
}

TEST_CASE("requests beyond the concurrency limit get 503, /-/healthy is never limited", "[http]") {
  HttpServerOptions options = test_options();
  AdmissionPolicy policy;
  policy.max_concurrent_requests = 3;
  options.admission = std::make_shared<const Admission>(policy);
  std::mutex mutex;
  std::condition_variable released_cv;
  bool released = false;
  std::atomic<int> blocked{0};
  HttpServer server(options, [&](const HttpRequest& request) {
    if (request.path == "/metrics") {
      ++blocked;
      std::unique_lock<std::mutex> lock(mutex);
      released_cv.wait_for(lock, std::chrono::seconds(10), [&] { return released; });
    }
    return text("ok\n");
  });
  std::vector<std::thread> scrapes;
  std::atomic<int> ok{0};
  for (int i = 0; i < 3; ++i) {
    scrapes.emplace_back([&] {
      try {
        if (get(server.port(), "/metrics").status == 200) ++ok;
      } catch (...) {
      }
    });
  }
  REQUIRE(wait_for([&] { return blocked == 3; }, 5.0));
  auto start = Clock::now();
  const Reply refused = get(server.port(), "/metrics");
  CHECK(refused.status == 503);
  CHECK_THAT(refused.body, Catch::Contains("3 requests for /metrics are in progress"));
  CHECK(seconds_since(start) < kAnswerWithinSeconds);
  start = Clock::now();
  CHECK(get(server.port(), "/-/healthy").status == 200);
  CHECK(seconds_since(start) < kAnswerWithinSeconds);
  {
    const std::lock_guard<std::mutex> lock(mutex);
    released = true;
  }
  released_cv.notify_all();
  for (auto& t : scrapes) t.join();
  CHECK(ok == 3);
  CHECK(blocked == 3);                                  // the refused one never reached the handler
  CHECK(get(server.port(), "/metrics").status == 200);  // the slots were released
}

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
