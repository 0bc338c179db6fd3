// CivetWeb's C API rather than CivetServer: mg_start2 reports *why* it could not start (port in
// use, permission denied), which CivetServer's constructor reduces to a generic exception. This is
// the only file that includes CivetWeb's header.
#include "common/unique_fd.h"
#include "exporter/http_server.h"

#include <arpa/inet.h>
#include <netdb.h>

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string_view>
#include <thread>

#include <civetweb.h>

#include "common/log.h"

namespace hwperf {
namespace {

// mg_error_data::code is a pointer to the caller's variable in CivetWeb 1.15 (Debian 12) and the
// code itself in 1.16 (Debian 13); overloading on the field's type fits both.
inline void point_error_code(unsigned*& field, unsigned& code) { field = &code; }
inline void point_error_code(unsigned& /*field holds the code itself*/, unsigned& /*unused*/) {}

const char* reason_phrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Unknown";
  }
}

bool all_digits(std::string_view text) {
  if (text.empty() || text.size() > 5) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// CivetWeb binds numeric addresses only; a host name is resolved here, once, at startup.
std::string numeric_host(const std::string& host, const std::string& where) {
  addrinfo hints{};
  hints.ai_family = http_server_supports_ipv6() ? AF_UNSPEC : AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | AI_ADDRCONFIG;
  addrinfo* found = nullptr;
  // Prefer IPv4 for names such as "localhost" that resolve to both.
  int rc = -1;
  if (hints.ai_family == AF_UNSPEC) {
    addrinfo v4 = hints;
    v4.ai_family = AF_INET;
    rc = getaddrinfo(host.c_str(), nullptr, &v4, &found);
  }
  if (rc != 0) rc = getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (rc != 0 || found == nullptr) {
    throw std::invalid_argument(where + ": cannot resolve \"" +
                                host + "\": " + gai_strerror(rc));
  }
  char text[INET6_ADDRSTRLEN] = {};
  std::string numeric;
  if (found->ai_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr, text,
              sizeof text);
    numeric = text;
  } else {
    inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(found->ai_addr)->sin6_addr, text,
              sizeof text);
    numeric = std::string("[") + text + "]";
  }
  freeaddrinfo(found);
  return numeric;
}

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

}  // namespace

bool http_server_supports_ipv6() { return mg_check_feature(MG_FEATURES_IPV6) != 0; }

std::string civetweb_listening_port(const std::string& listen_address,
                                    const std::string& written_as) {
  const std::string where = written_as.empty() ? "--web.listen-address=" + listen_address : written_as;
  const std::string expected = " (expected [HOST]:PORT, e.g. :9477, 127.0.0.1:9477 or [::1]:9477)";
  const auto colon = listen_address.rfind(':');
  if (colon == std::string::npos) {
    throw std::invalid_argument(where + ": no port" + expected);
  }
  const std::string host = listen_address.substr(0, colon);
  const std::string port = listen_address.substr(colon + 1);
  if (!all_digits(port) || std::stoul(port) > 65535) {
    throw std::invalid_argument(where + ": bad port \"" + port +
                                "\"" + expected);
  }
  if (host.empty()) return port;  // every IPv4 address, like node_exporter's ":9100"
  if (host.front() == '[') {
    if (host.back() != ']' || host.size() < 3) {
      throw std::invalid_argument(where + ": unterminated IPv6 address" +
                                  expected);
    }
    in6_addr ignored{};
    if (inet_pton(AF_INET6, host.substr(1, host.size() - 2).c_str(), &ignored) != 1) {
      throw std::invalid_argument(where + ": bad IPv6 address" +
                                  expected);
    }
    if (!http_server_supports_ipv6()) {
      throw std::invalid_argument(
          where +
          ": the CivetWeb library this exporter runs with was built without IPv6 support (as "
          "Debian 12's libcivetweb is); listen on an IPv4 address such as :9477 instead");
    }
    return host + ":" + port;
  }
  in_addr ignored{};
  if (inet_pton(AF_INET, host.c_str(), &ignored) == 1) return host + ":" + port;
  return numeric_host(host, where) + ":" + port;
}

struct HttpServer::Impl {
  HttpHandler handler;
  mg_context* context = nullptr;
  std::string listen_host;   // as the user wrote it; "" = every address
  std::string numeric_host;  // what CivetWeb bound: "" (every IPv4 address), "1.2.3.4", "[::1]"

  static int on_request(mg_connection* connection) {
    auto* self = static_cast<Impl*>(mg_get_user_data(mg_get_context(connection)));
    const mg_request_info* info = mg_get_request_info(connection);
    HttpRequest request;
    request.method = info->request_method ? info->request_method : "";
    request.path = info->local_uri ? info->local_uri : "/";
    const char* accept = mg_get_header(connection, "Accept");
    const char* encoding = mg_get_header(connection, "Accept-Encoding");
    request.accept = accept ? accept : "";
    request.accept_encoding = encoding ? encoding : "";

    HttpResponse response;
    // Nothing may unwind into CivetWeb's C frames: that would terminate the process.
    try {
      response = self->handler(request);
    } catch (const std::exception& e) {
      response = HttpResponse{500, "text/plain; charset=utf-8", {}, std::string("error: ") + e.what() + "\n"};
    } catch (...) {
      response = HttpResponse{500, "text/plain; charset=utf-8", {}, "error: unknown\n"};
    }
    std::string head = "HTTP/1.1 " + std::to_string(response.status) + " " +
                       reason_phrase(response.status) + "\r\n";
    head += "Content-Type: " + response.content_type + "\r\n";
    head += "Content-Length: " + std::to_string(response.body.size()) + "\r\n";
    for (const auto& [name, value] : response.headers) head += name + ": " + value + "\r\n";
    head += "\r\n";
    mg_write(connection, head.data(), head.size());
    if (request.method != "HEAD" && !response.body.empty()) {
      mg_write(connection, response.body.data(), response.body.size());
    }
    return static_cast<int>(response.status);  // non-zero: handled, CivetWeb does nothing more
  }

  static int on_log(const mg_connection*, const char* message) {
    log::debug(std::string("civetweb: ") + message);
    return 1;
  }
};

HttpServer::HttpServer(const HttpServerOptions& options, HttpHandler handler)
    : impl_(std::make_unique<Impl>()) {
  static std::once_flag library_once;
  std::call_once(library_once, [] { mg_init_library(0); });
  impl_->handler = std::move(handler);
  impl_->listen_host = options.listen_address.substr(0, options.listen_address.rfind(':'));

  const std::string ports = options.civetweb_ports.empty()
                                ? civetweb_listening_port(options.listen_address)
                                : options.civetweb_ports;
  if (const auto colon = ports.rfind(':'); colon != std::string::npos) {
    impl_->numeric_host = ports.substr(0, colon);
  }
  const std::string threads = std::to_string(options.worker_threads);
  const std::string timeout = std::to_string(options.request_timeout_ms);
  const char* civet_options[] = {"listening_ports", ports.c_str(),
                                 "num_threads", threads.c_str(),
                                 "request_timeout_ms", timeout.c_str(),
                                 "enable_keep_alive", "yes",
                                 nullptr};
  mg_callbacks callbacks{};
  callbacks.begin_request = &Impl::on_request;
  callbacks.log_message = &Impl::on_log;
  mg_init_data init{};
  init.callbacks = &callbacks;
  init.user_data = impl_.get();
  init.configuration_options = civet_options;
  char error_text[256] = {};
  unsigned error_code = 0;
  mg_error_data error{};
  point_error_code(error.code, error_code);
  error.text = error_text;
  error.text_buffer_size = sizeof error_text;
  impl_->context = mg_start2(&init, &error);
  if (impl_->context == nullptr) {
    throw std::runtime_error("cannot listen on " + options.listen_address + ": " +
                             (error_text[0] ? error_text : "CivetWeb failed to start"));
  }
}

// CivetWeb's master thread polls its listening sockets with a 2 s quantum and only then sees the
// stop flag; a connection of our own wakes it, so that SIGTERM ends the process well within a
// second. The poke repeats because the flag may not be set yet when the first one lands.
HttpServer::~HttpServer() {
  if (!impl_ || !impl_->context) return;
  const unsigned bound_port = port();
  std::string host = impl_->numeric_host;
  if (host.empty() || host == "0.0.0.0") host = "127.0.0.1";
  if (host == "[::]") host = "[::1]";
  if (host.front() == '[') host = host.substr(1, host.size() - 2);
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

unsigned HttpServer::port() const {
  mg_server_port ports[4] = {};
  const int count = mg_get_server_ports(impl_->context, 4, ports);
  return count > 0 ? static_cast<unsigned>(ports[0].port) : 0;
}

std::string HttpServer::bound_address() const {
  return impl_->listen_host + ":" + std::to_string(port());
}

}  // namespace hwperf
