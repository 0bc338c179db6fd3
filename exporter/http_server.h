// The CivetWeb server. Only http_server.cpp includes CivetWeb's header.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "config/config.h"
#include "exporter/http.h"

namespace hwperf {

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

struct HttpServerOptions {
  std::string listen_address = kDefaultListenAddress;  // [HOST]:PORT; PORT 0: a free port
  // listen_address as civetweb_listening_port() resolved it, when the caller already has (the
  // exporter resolves it once, before building collectors, to fail early on a bad address).
  std::string civetweb_ports;
  unsigned worker_threads = 8;
  unsigned request_timeout_ms = 10000;
};

// "[HOST]:PORT" -> CivetWeb's listening_ports syntax. Throws std::invalid_argument with a message
// that names the address ("\"HOST:PORT\": ...") and the expected form; the caller says where it
// was written.
// `written_as` names where the address came from in messages (default
// "--web.listen-address=ADDRESS").
std::string civetweb_listening_port(const std::string& listen_address,
                                    const std::string& written_as = "");
bool http_server_supports_ipv6();

class HttpServer {
 public:
  // Binds and starts serving, or throws std::runtime_error naming the address and the reason
  // (address in use, permission denied, ...). The handler must be thread-safe; an exception it
  // throws becomes a 500 and never reaches CivetWeb's threads.
  HttpServer(const HttpServerOptions& options, HttpHandler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  unsigned port() const;               // the bound port (useful with port 0)
  std::string bound_address() const;   // e.g. "127.0.0.1:9477" or "[::]:9477"

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hwperf
