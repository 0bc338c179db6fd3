// CivetWeb's C API rather than CivetServer: mg_start2 reports *why* it could not start (port in
// use, permission denied), which CivetServer's constructor reduces to a generic exception. This is
// the only file that includes CivetWeb's header.
#include "web/http_server.h"

#include <arpa/inet.h>
#include <netdb.h>

#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <climits>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <string_view>
#include <thread>

#include <civetweb.h>

#include "common/log.h"
#include "common/open_files.h"
#include "common/unique_fd.h"
#include "web/http_wire.h"
#include "web/openssl_shim/loader.h"
#include "web/tls.h"

namespace hwperf {
namespace {

// mg_error_data::code is a pointer to the caller's variable in CivetWeb 1.15 (Debian 12) and the
// code itself in 1.16 (Debian 13); overloading on the field's type fits both.
inline void point_error_code(unsigned*& field, unsigned& code) { field = &code; }
inline void point_error_code(unsigned& /*field holds the code itself*/, unsigned& /*unused*/) {}

void poke(const std::string& numeric_host, unsigned port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (getaddrinfo(numeric_host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) return;
  const UniqueFd socket(::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (socket.valid()) ::connect(socket.get(), found->ai_addr, found->ai_addrlen);
  freeaddrinfo(found);
}

// How many file descriptors to keep free for everything but connections: logging, /proc and
// sysfs reads, and a few per collection in progress; under a small limit, a quarter of it (a
// collection that then finds no descriptor fails alone, as a failed collector).
unsigned long fd_reserve(unsigned worker_threads, unsigned max_concurrent_requests, rlim_t limit) {
  const unsigned collections = max_concurrent_requests == 0
                                   ? worker_threads
                                   : std::min(max_concurrent_requests, worker_threads);
  const unsigned long wanted = 8 + 2ul * collections;
  if (limit == RLIM_INFINITY) return wanted;
  return std::min(wanted, std::max(8ul, static_cast<unsigned long>(limit) / 4));
}

// Where bind(2) fails, and why, for a clear message; CivetWeb only says "Failed to setup server
// ports" (the errno is in a debug-level log line). 0 when the probe binds (the address became free
// in between).
int probe_bind(const std::string& numeric_host, unsigned port) {
  sockaddr_storage address{};
  socklen_t length = 0;
  if (!numeric_host.empty() && numeric_host.front() == '[') {
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&address);
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<std::uint16_t>(port));
    if (inet_pton(AF_INET6, numeric_host.substr(1, numeric_host.size() - 2).c_str(),
                  &v6->sin6_addr) != 1) {
      return EINVAL;
    }
    length = sizeof *v6;
  } else {
    auto* v4 = reinterpret_cast<sockaddr_in*>(&address);
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<std::uint16_t>(port));
    if (numeric_host.empty()) {
      v4->sin_addr.s_addr = htonl(INADDR_ANY);
    } else if (inet_pton(AF_INET, numeric_host.c_str(), &v4->sin_addr) != 1) {
      return EINVAL;
    }
    length = sizeof *v4;
  }
  const UniqueFd socket(::socket(address.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!socket.valid()) return errno;
  const int on = 1;
  setsockopt(socket.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);  // as CivetWeb does
  if (::bind(socket.get(), reinterpret_cast<const sockaddr*>(&address), length) != 0) return errno;
  return 0;
}

bool header_has_token(const char* header, std::string_view token) {
  if (header == nullptr) return false;
  std::string lower(header);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower.find(token) != std::string::npos;
}

// What CivetWeb will decide for keep-alive from the request alone (its should_keep_alive()).
bool client_keeps_alive(const mg_request_info* info, const char* connection_header) {
  if (connection_header != nullptr) return header_has_token(connection_header, "keep-alive");
  return info->http_version != nullptr && std::strcmp(info->http_version, "1.1") == 0;
}

// Makes CivetWeb close this connection after the current request instead of reading the next one
// (or the rest of this one's body). CivetWeb 1.15 has no call for that; mg_send_http_error()
// sets its "must close" flag and, once a response has been written (as it has when this is
// called), writes nothing: with status 304 there is no body and the headers are refused because
// they were already sent.
void close_after_response(mg_connection* connection) {
  mg_send_http_error(connection, 304, "%s", "");
}

// Room for every connection CivetWeb may accept within the open-file limit (raised by its one
// owner, common/open_files.h, as far as it goes), else fewer connections at once, said so; none
// is a startup error naming the remedy.
ConnectionBudget connections_within_open_files(const HttpServerOptions& options,
                                               unsigned max_scrapes) {
  const unsigned long limit = raise_open_file_limit();
  const bool unlimited = limit == ULONG_MAX;
  const unsigned long open_now = open_file_count() + 1;  // + the listening socket
  const unsigned long wanted = open_now +
                               fd_reserve(options.worker_threads, max_scrapes, RLIM_INFINITY) +
                               options.worker_threads + options.connection_queue + 1;
  unsigned long free_fds = wanted;
  if (!unlimited) {
    const unsigned long reserve =
        fd_reserve(options.worker_threads, max_scrapes, static_cast<rlim_t>(limit));
    free_fds = limit > open_now + reserve ? limit - open_now - reserve : 0;
  }
  const ConnectionBudget budget =
      fit_connections(options.worker_threads, std::max(1u, options.connection_queue), free_fds);
  const std::string remedy = "raise it to at least " + std::to_string(wanted) +
                             " (`ulimit -n`, systemd LimitNOFILE=, docker run --ulimit nofile=)";
  if (budget.worker_threads == 0) {
    throw std::runtime_error("cannot listen on " + options.listen_address.text() +
                             ": the open-file limit (RLIMIT_NOFILE) is " + std::to_string(limit) +
                             " and " + std::to_string(open_now) +
                             " files are open, which leaves no room for connections; " + remedy);
  }
  if (budget.reduced) {
    log::warn("the open-file limit (RLIMIT_NOFILE) is " + std::to_string(limit) +
              ": serving at most " + std::to_string(budget.worker_threads) +
              " connections at once, " + std::to_string(budget.connection_queue) +
              " more waiting, instead of " + std::to_string(options.worker_threads) + " and " +
              std::to_string(options.connection_queue) + "; " + remedy);
  }
  return budget;
}

}  // namespace

std::string describe_bind_error(const std::string& listen_address, int error_number) {
  const std::string port = listen_address.substr(listen_address.rfind(':') + 1);
  std::string text = "cannot listen on " + listen_address + ": " + std::strerror(error_number);
  switch (error_number) {
    case EADDRINUSE:
      text += " (another process listens on port " + port +
              ": find it with `ss -ltnp 'sport = :" + port +
              "'`, stop it, or choose another --web.listen-address)";
      break;
    case EACCES:
      text +=
          " (ports below 1024 need root or the CAP_NET_BIND_SERVICE capability: choose a port "
          "from 1024 up, or grant it with systemd's AmbientCapabilities=CAP_NET_BIND_SERVICE "
          "or `setcap cap_net_bind_service=+ep` on the binary)";
      break;
    case EADDRNOTAVAIL:
      text +=
          " (the host part is not an address of this host: list them with `ip -brief "
          "address`, or listen on :" +
          port + " for every IPv4 address)";
      break;
    default: break;
  }
  return text;
}

ConnectionBudget fit_connections(unsigned worker_threads, unsigned connection_queue,
                                 unsigned long available) {
  // CivetWeb holds at most workers + queue accepted sockets, plus one that its master thread has
  // accepted and waits to queue.
  const unsigned long wanted = static_cast<unsigned long>(worker_threads) + connection_queue + 1;
  if (available >= wanted) return {worker_threads, connection_queue, false};
  if (available < 3) return {0, 0, true};
  ConnectionBudget budget;
  budget.reduced = true;
  budget.worker_threads =
      std::min(worker_threads, static_cast<unsigned>(std::max(1ul, (available - 1) * 3 / 4)));
  budget.connection_queue = std::max(
      1u, std::min(connection_queue, static_cast<unsigned>(available - 1 - budget.worker_threads)));
  return budget;
}

struct HttpServer::Impl {
  HttpHandler handler;
  std::shared_ptr<const Admission> admission;
  mg_context* context = nullptr;
  ListenAddress listen_address;
  unsigned worker_threads = 0;
  unsigned connection_queue = 0;
  std::atomic<int> connections{0};  // connections owned by a worker

  std::vector<std::pair<std::string, std::string>> response_headers;

  std::shared_ptr<TlsCertificates> tls;  // outlives CivetWeb's SSL_CTX, which calls into it
  std::string tls_error;                 // why init_ssl failed, for the startup error

  std::mutex accept_mutex;
  std::condition_variable accept_allowed;
  bool accepting = true;

  std::mutex log_mutex;
  std::string last_log;  // CivetWeb's last message, for a startup error nothing else explains

  HttpResponse respond(const HttpRequest& request) {
    Admission::Ticket ticket = admission->admit(request);
    if (!ticket.admitted()) return std::move(ticket.refusal());
    return call_handler(request);  // the ticket holds the request's place until it is answered
  }

  HttpResponse call_handler(const HttpRequest& request) {
    // Nothing may unwind into CivetWeb's C frames: that would terminate the process.
    try {
      return handler(request);
    } catch (const std::exception& e) {
      return HttpResponse{500, kTextPlain, {}, std::string("error: ") + e.what() + "\n"};
    } catch (...) {
      return HttpResponse{500, kTextPlain, {}, "error: unknown\n"};
    }
  }

  static Impl* of(const mg_connection* connection) {
    return static_cast<Impl*>(mg_get_user_data(mg_get_context(connection)));
  }

  static int on_request(mg_connection* connection) {
    Impl* self = of(connection);
    const mg_request_info* info = mg_get_request_info(connection);
    HttpRequest request;
    request.method = info->request_method ? info->request_method : "";
    request.path = info->local_uri ? info->local_uri : "/";
    request.query = info->query_string ? info->query_string : "";
    const char* accept = mg_get_header(connection, "Accept");
    const char* encoding = mg_get_header(connection, "Accept-Encoding");
    request.accept = accept ? accept : "";
    request.accept_encoding = encoding ? encoding : "";
    const char* authorization = mg_get_header(connection, "Authorization");
    request.authorization = authorization ? authorization : "";
    request.has_body =
        info->content_length > 0 || mg_get_header(connection, "Transfer-Encoding") != nullptr;

    const HttpResponse response = self->respond(request);

    // Keep-alive must not starve new connections: an idle keep-alive connection holds a worker
    // for up to keep_alive_timeout_ms, and one that keeps sending requests holds it for ever. So
    // when three quarters of the workers are busy, each keep-alive connection is closed after its
    // current response and its client reconnects through the queue like everyone else.
    const bool workers_scarce =
        static_cast<unsigned>(self->connections.load()) * 4 > self->worker_threads * 3;
    const bool keep_alive = client_keeps_alive(info, mg_get_header(connection, "Connection"));
    bool close = request.has_body || workers_scarce || !keep_alive;

    // One write: headers and body in separate writes would meet the client's delayed ACK and
    // cost about 40 ms on every keep-alive request (TCP_NODELAY is set too).
    const std::string out =
        wire_response(response, self->response_headers, close, request.method == "HEAD");
    const int written = mg_write(connection, out.data(), out.size());
    // A client that does not read its responses (CivetWeb gave up after request_timeout_ms) must
    // lose the connection, or every request it pipelined would hold the worker that long again.
    if (written < 0 || static_cast<std::size_t>(written) != out.size()) close = true;
    if (close) close_after_response(connection);
    return response.status;  // non-zero: handled, CivetWeb does nothing more
  }

  // CivetWeb calls on_connection_open only once a TLS handshake has succeeded, but
  // on_connection_close for every connection, failed handshakes included, and keeps a worker's
  // connection data from its previous connection: so a connection is marked when counted, and
  // only a marked one is uncounted. (A connection still in its handshake is not counted: the
  // handshake is bounded by request_timeout_ms like a request head.)
  static int on_connection_open(const mg_connection* connection, void** connection_data) {
    ++of(connection)->connections;
    *connection_data = of(connection);
    return 0;
  }
  static void on_connection_close(const mg_connection* connection) {
    if (mg_get_user_connection_data(connection) == nullptr) return;
    mg_set_user_connection_data(connection, nullptr);
    --of(connection)->connections;
  }

  // CivetWeb made the SSL_CTX (in mg_start2, on this thread); 1: everything is set up here, so
  // CivetWeb's own certificate options stay unused.
  static int on_init_ssl(void* ssl_ctx, void* user_data) {
    Impl* self = static_cast<Impl*>(user_data);
    if (!self->tls) return -1;
    try {
      self->tls->configure(ssl_ctx);
      return 1;
    } catch (const std::exception& e) {
      self->tls_error = e.what();
      return -1;
    }
  }

  // CivetWeb's master thread (type 0) calls this before its accept loop; workers (type 1) only
  // ever get connections the master accepted, so holding the master holds every request.
  static void* on_thread_start(const mg_context* context, int thread_type) {
    if (thread_type != 0) return nullptr;
    Impl* self = static_cast<Impl*>(mg_get_user_data(context));
    std::unique_lock<std::mutex> lock(self->accept_mutex);
    self->accept_allowed.wait(lock, [self] { return self->accepting; });
    return nullptr;
  }

  void allow_accept() {
    {
      const std::lock_guard<std::mutex> lock(accept_mutex);
      accepting = true;
    }
    accept_allowed.notify_all();
  }

  // CivetWeb started with the budget fitted (worker_threads, connection_queue) on `ports`; throws
  // std::runtime_error naming why it could not start.
  void start(const HttpServerOptions& options, const std::string& ports) {
    const std::string threads = std::to_string(worker_threads);
    const std::string queue = std::to_string(connection_queue);
    const std::string backlog = std::to_string(std::max(1u, options.listen_backlog));
    const std::string timeout = std::to_string(std::max(1u, options.request_timeout_ms));
    const std::string keep_alive_timeout =
        std::to_string(std::max(1u, options.keep_alive_timeout_ms));
    const char* civet_options[] = {"listening_ports",
                                   ports.c_str(),
                                   "num_threads",
                                   threads.c_str(),
                                   "connection_queue",
                                   queue.c_str(),
                                   "listen_backlog",
                                   backlog.c_str(),
                                   "request_timeout_ms",
                                   timeout.c_str(),
                                   "keep_alive_timeout_ms",
                                   keep_alive_timeout.c_str(),
                                   "enable_keep_alive",
                                   "yes",
                                   "tcp_nodelay",
                                   "1",
                                   nullptr};
    mg_callbacks callbacks{};
    callbacks.begin_request = &Impl::on_request;
    callbacks.log_message = &Impl::on_log;
    callbacks.init_connection = &Impl::on_connection_open;
    callbacks.connection_close = &Impl::on_connection_close;
    callbacks.init_thread = &Impl::on_thread_start;
    if (options.tls) callbacks.init_ssl = &Impl::on_init_ssl;
    mg_init_data init{};
    init.callbacks = &callbacks;
    init.user_data = this;
    init.configuration_options = civet_options;
    char error_text[256] = {};
    unsigned error_code = 0;
    mg_error_data error{};
    point_error_code(error.code, error_code);
    error.text = error_text;
    error.text_buffer_size = sizeof error_text;
    context = mg_start2(&init, &error);
    if (context == nullptr) throw std::runtime_error(start_failure(options, error_text));
  }

  // Why CivetWeb did not start: bind(2)'s own error where a probe finds one, else what CivetWeb
  // and its last log line say.
  std::string start_failure(const HttpServerOptions& options, const char* error_text) {
    const ListenAddress& address = options.listen_address;
    if (const int bind_error = probe_bind(address.numeric_host(), address.port())) {
      return describe_bind_error(address.text(), bind_error);
    }
    std::string detail = error_text[0] ? error_text : "CivetWeb failed to start";
    if (!tls_error.empty()) detail = tls_error;
    {
      const std::lock_guard<std::mutex> lock(log_mutex);
      if (!last_log.empty()) detail += " (" + last_log + ")";
    }
    return "cannot listen on " + address.text() + ": " + detail;
  }

  static int on_log(const mg_connection* connection, const char* message) {
    log::debug(std::string("civetweb: ") + message);
    if (Impl* self = connection != nullptr ? of(connection) : nullptr) {
      const std::lock_guard<std::mutex> lock(self->log_mutex);
      self->last_log = message;
    }
    return 1;
  }
};

HttpServer::HttpServer(const HttpServerOptions& options, HttpHandler handler)
    : impl_(std::make_unique<Impl>()) {
  static std::once_flag library_once;
  std::call_once(library_once, [] { mg_init_library(0); });
  impl_->handler = std::move(handler);
  impl_->admission =
      options.admission ? options.admission : std::make_shared<const Admission>(AdmissionPolicy{});
  impl_->listen_address = options.listen_address;
  impl_->response_headers = options.response_headers;
  impl_->accepting = !options.accept_later;
  if (options.worker_threads == 0) {
    throw std::invalid_argument("the HTTP server needs at least one worker thread");
  }

  std::string ports = options.listen_address.civetweb_ports();
  if (options.tls) {
    // Read and checked before CivetWeb starts (by the caller, or here), so that errors name the
    // file; CivetWeb's context gets them through on_init_ssl.
    impl_->tls = options.certificates ? options.certificates
                                      : std::make_shared<TlsCertificates>(*options.tls);
    load_civetweb_openssl();
    assert_civetweb_openssl_loaded();
    ports += "s";  // CivetWeb's suffix for a TLS-only port
  }

  const ConnectionBudget budget =
      connections_within_open_files(options, impl_->admission->policy().max_concurrent_requests);
  impl_->worker_threads = budget.worker_threads;
  impl_->connection_queue = budget.connection_queue;
  impl_->start(options, ports);
}

// CivetWeb's master thread polls its listening sockets with a 2 s quantum and only then sees the
// stop flag; a connection of our own wakes it, so that SIGTERM ends the process well within a
// second. The poke repeats because the flag may not be set yet when the first one lands.
HttpServer::~HttpServer() {
  if (!impl_ || !impl_->context) return;
  impl_->allow_accept();  // a held master thread could never see the stop flag
  const unsigned bound_port = port();
  const std::string host = impl_->listen_address.reachable_host();
  std::atomic<bool> stopped{false};
  std::thread stopper;
  try {
    stopper = std::thread([this, &stopped] {
      mg_stop(impl_->context);
      stopped = true;
    });
  } catch (...) {
    // No thread to spare: stop the slow way rather than not at all.
    mg_stop(impl_->context);
    return;
  }
  while (!stopped) {
    poke(host, bound_port);
    for (int i = 0; i < 10 && !stopped; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  stopper.join();
}

void HttpServer::accept_connections() { impl_->allow_accept(); }

unsigned HttpServer::port() const {
  mg_server_port ports[4] = {};
  const int count = mg_get_server_ports(impl_->context, 4, ports);
  return count > 0 ? static_cast<unsigned>(ports[0].port) : 0;
}

std::string HttpServer::bound_address() const {
  return impl_->listen_address.host() + ":" + std::to_string(port());
}

unsigned HttpServer::worker_threads() const { return impl_->worker_threads; }
unsigned HttpServer::connection_queue() const { return impl_->connection_queue; }
unsigned HttpServer::busy_workers() const {
  return static_cast<unsigned>(std::max(0, impl_->connections.load()));
}

}  // namespace hwperf
