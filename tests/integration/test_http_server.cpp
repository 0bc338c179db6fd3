// The HTTP server under hostile and heavy clients, over loopback sockets: deadlines, keep-alive
// latency and the concurrency limit. Servers run in-process on 127.0.0.1:0 with small deadlines
// so that every test stays within a few seconds; timings are only asserted as generous bounds.
// The open-file limit and bind errors are in test_http_server_limits.cpp.
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

namespace {

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
  options.tls = server_tls(certificates);
  HttpServer server(options, simple_handler());
  const std::string https = https_metrics_url(server.port());
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
