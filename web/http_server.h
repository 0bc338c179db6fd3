// The CivetWeb server. Only web/*.cpp include CivetWeb's header.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "config/web_config.h"
#include "web/admission.h"
#include "web/http.h"
#include "web/listen_address.h"

namespace hwperf {

class TlsCertificates;

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

// Limits and deadlines of the HTTP server. CivetWeb gives each connection a worker thread for as
// long as the connection lasts, so every slow or idle client holds one worker until a deadline
// below drops it. The defaults keep a few dozen such clients from delaying a scrape;
// docs/deployment.md ("HTTP limits") explains each one.
struct HttpServerOptions {
  ListenAddress listen_address = ListenAddress::parse(kDefaultListenAddress);  // PORT 0: any

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

  // What every request passes before the handler (web/admission.h). Null: AdmissionPolicy's
  // defaults (no authentication, no rate limit, 40 scrapes of /metrics at once).
  std::shared_ptr<const Admission> admission;

  // Added to every response (http_server_config.headers).
  std::vector<std::pair<std::string, std::string>> response_headers;

  // When true, CivetWeb's listening thread waits before its first accept(2) until
  // accept_connections(): the process can give up root (--runtime.user) in between, so that no
  // request is ever read by a privileged thread. Connections that arrive meanwhile wait in the
  // kernel's listen backlog.
  bool accept_later = false;

  // Serve HTTPS only (plain HTTP on the port fails the handshake). The TLS handshake must finish
  // within request_timeout_ms, like a request head. `certificates`, when given, were read from
  // `tls` already (the exporter reads them once, at startup); else the server reads them.
  std::optional<TlsServerConfig> tls;
  std::shared_ptr<TlsCertificates> certificates;
};

// Why bind(2) failed, said for a user: the address, the errno text and the remedy.
std::string describe_bind_error(const std::string& listen_address, int error_number);

// Connections the server may accept at once given the open-file limit. CivetWeb's master thread
// spins on accept(2) without logging once the process is out of file descriptors, so the server
// never accepts more connections than the limit leaves room for. The limit itself has one owner,
// common/open_files.h (raise_open_file_limit(), which the exporter calls at startup and the
// server again, idempotently, when started alone); the server only fits within it.
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
  // cannot be used, too few open files). The handler runs for admitted requests only; it must be
  // thread-safe, and an exception it throws becomes a 500 and never reaches CivetWeb's threads.
  HttpServer(const HttpServerOptions& options, HttpHandler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Lets the listening thread accept (see HttpServerOptions::accept_later). Idempotent.
  void accept_connections();

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
