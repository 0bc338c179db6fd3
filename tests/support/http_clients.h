// What the HTTP server tests use to serve and to be a client over loopback sockets: small
// deadlines, a plain handler, and one request or response at a time on a raw connection.
#pragma once

#include <sys/socket.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>

#include "common/unique_fd.h"
#include "config/web_config.h"
#include "tests/catch.hpp"
#include "tests/support/support.h"
#include "web/http_server.h"

namespace hwperf::test::http_clients {

using Clock = std::chrono::steady_clock;

using test::seconds_since;

// A server on 127.0.0.1 at a port the kernel picks, answering within `request_timeout_ms`.
inline HttpServerOptions loopback_options(int request_timeout_ms) {
  HttpServerOptions options;
  options.listen_address = ListenAddress::parse("127.0.0.1:0");
  options.request_timeout_ms = request_timeout_ms;
  return options;
}

// Deadlines small enough that every test that waits them out stays within a few seconds.
inline HttpServerOptions test_options() {
  HttpServerOptions options = loopback_options(1000);
  options.keep_alive_timeout_ms = 500;
  return options;
}

inline hwperf::HttpResponse text(std::string body) {
  return hwperf::HttpResponse{200, "text/plain; charset=utf-8", {}, std::move(body)};
}

// /metrics answers `metrics_body`, anything else "ok".
inline HttpHandler simple_handler(std::string metrics_body = "metric 1\n") {
  return [body = std::move(metrics_body)](const hwperf::HttpRequest& request) {
    return text(request.path == "/metrics" ? body : "ok\n");
  };
}

inline void send_all(int fd, const std::string& data) {
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
inline Reply read_reply(int fd, std::string& buffer) {
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
inline Reply get(unsigned port, const std::string& path) {
  const UniqueFd socket = connect_to(port);
  send_all(socket.get(),
           "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  std::string buffer;
  return read_reply(socket.get(), buffer);
}

// The TLS settings of a server presenting `certificates`' server certificate and key.
inline TlsServerConfig server_tls(const TestCertificates& certificates) {
  TlsServerConfig tls;
  tls.cert_file = certificates.server_cert.string();
  tls.key_file = certificates.server_key.string();
  return tls;
}

// An HTTPS server on 127.0.0.1 at a port the kernel picks, with `worker_threads` workers.
inline HttpServerOptions tls_server_options(const TlsServerConfig& tls, unsigned worker_threads) {
  HttpServerOptions options;
  options.listen_address = ListenAddress::parse("127.0.0.1:0");
  options.worker_threads = worker_threads;
  options.tls = tls;
  return options;
}

inline std::string https_metrics_url(unsigned port) {
  return "https://127.0.0.1:" + std::to_string(port) + "/metrics";
}

// After a rotation of certificates: `fresh` is let in, `stale` no longer, and the log says
// `logged`. `with` runs curl with the client or trust of the certificates it is given.
inline void check_rotated(const std::function<CurlResult(const TestCertificates&)>& with,
                          const TestCertificates& fresh, const TestCertificates& stale,
                          const std::string& logged) {
  const CapturedStderr log;
  const auto rotated = with(fresh);
  INFO(rotated.error);
  CHECK(rotated.status == 200);
  CHECK(with(stale).status == 0);
  CHECK_THAT(log.text(), Catch::Contains(logged));
}

}  // namespace hwperf::test::http_clients
