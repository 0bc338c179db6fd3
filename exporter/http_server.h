// The CivetWeb server. Only http_server.cpp includes CivetWeb's header.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "config/web_config.h"
#include "exporter/http.h"

namespace hwperf {

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

// Limits and deadlines of the HTTP server. CivetWeb gives each connection a worker thread for as
// long as the connection lasts, so every slow or idle client holds one worker until a deadline
// below drops it. The defaults keep a few dozen such clients from delaying a scrape;
// docs/deployment.md ("HTTP limits") explains each one.
struct HttpServerOptions {
  std::string listen_address = kDefaultListenAddress;  // [HOST]:PORT; PORT 0: a free port
  // listen_address as civetweb_listening_port() resolved it, when the caller already has (the
  // exporter resolves it once, before building collectors, to fail early on a bad address).
  std::string civetweb_ports;

  // Worker threads, started at once (CivetWeb 1.15 cannot start them on demand). A scrape needs
  // one worker only while its request is read and answered, but an idle, slow or keep-alive
  // connection holds one until a deadline drops it. 128 leaves room for max_concurrent_requests
  // scrapes plus dozens of such connections, and costs a few MB of memory (the threads' stacks
  // are mostly untouched) and 128 file descriptors at most.
  unsigned worker_threads = 128;

  // The whole request head (request line and headers) must arrive within this many ms of the
  // connection's first byte being awaited, or the connection is closed (a client that trickles
  // bytes is closed at the latest after twice this). CivetWeb also uses it for writes: a response
  // write that makes no progress for this long (rounded up to CivetWeb's 2 s poll quantum) fails
  // and the connection is closed. Under Prometheus' default 10 s scrape timeout.
  unsigned request_timeout_ms = 5000;

  // How long an idle keep-alive connection may wait for its next request. Prometheus scrapes far
  // less often, so this only serves bursts (browsers, benchmarks); short, because the connection
  // holds a worker while it waits.
  unsigned keep_alive_timeout_ms = 1000;

  // Accepted connections waiting for a free worker (CivetWeb's connection_queue). Beyond it new
  // connections wait in the kernel's listen backlog and are not accepted, so no file descriptor
  // is spent on them.
  unsigned connection_queue = 64;
  // The kernel's queue of connections not yet accepted (capped by net.core.somaxconn).
  unsigned listen_backlog = 1024;

  // At most this many requests for limited_path are handled at once (node_exporter's
  // --web.max-requests); more get 503 at once instead of queuing. Other paths (/-/healthy, the
  // landing page) are never limited. 0 means no limit.
  unsigned max_concurrent_requests = 40;
  std::string limited_path = "/metrics";

  // Added to every response (http_server_config.headers).
  std::vector<std::pair<std::string, std::string>> response_headers;

  // At most rate_limit->burst requests at once, refilled one per interval; beyond, 429 at once
  // (exporter-toolkit's rate_limit). unlimited_path (liveness probes) is never limited.
  std::optional<RateLimit> rate_limit;
  std::string unlimited_path = "/-/healthy";

  // Runs before the concurrency limit: a response here (401, 404, 405) ends the request, so that
  // only requests the application accepts (authenticated ones) take one of the limited places.
  std::function<std::optional<HttpResponse>(const HttpRequest&)> admit;

  // Serve HTTPS only (plain HTTP on the port fails the handshake). The TLS handshake must finish
  // within request_timeout_ms, like a request head.
  std::optional<TlsServerConfig> tls;
};

// "[HOST]:PORT" -> CivetWeb's listening_ports syntax. Throws std::invalid_argument with a message
// that names the address ("\"HOST:PORT\": ...") and the expected form; the caller says where it
// was written.
// `written_as` names where the address came from in messages (default
// "--web.listen-address=ADDRESS").
std::string civetweb_listening_port(const std::string& listen_address,
                                    const std::string& written_as = "");
bool http_server_supports_ipv6();

// Why bind(2) failed, said for a user: the address, the errno text and the remedy.
std::string describe_bind_error(const std::string& listen_address, int error_number);

// Connections the server may accept at once given the open-file limit. CivetWeb's master thread
// spins on accept(2) without logging once the process is out of file descriptors, so the server
// never accepts more connections than the limit leaves room for.
// The fewest descriptors the server can work with: the listening socket, one connection, and
// the reserve it keeps for collections (at least 8), with a little room.
inline constexpr unsigned long kMinimumHttpFiles = 16;

struct ConnectionBudget {
  unsigned worker_threads = 0;
  unsigned connection_queue = 0;
  bool reduced = false;  // true: the limit forced fewer workers or a shorter queue
};
// `available` descriptors are free for connections (limit minus those open minus a reserve).
ConnectionBudget fit_connections(unsigned worker_threads, unsigned connection_queue,
                                 unsigned long available);

class HttpServer {
 public:
  // Binds and starts serving, or throws std::runtime_error naming the address, the reason and the
  // remedy (address in use, permission denied, not an address of this host, a TLS file that
  // cannot be used). The handler must be
  // thread-safe; an exception it throws becomes a 500 and never reaches CivetWeb's threads.
  HttpServer(const HttpServerOptions& options, HttpHandler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  unsigned port() const;              // the bound port (useful with port 0)
  std::string bound_address() const;  // e.g. "127.0.0.1:9477" or "[::]:9477"
  // What the server runs with after fitting the open-file limit.
  unsigned worker_threads() const;
  unsigned connection_queue() const;
  // Connections being served now; each holds a worker thread.
  unsigned busy_workers() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hwperf
