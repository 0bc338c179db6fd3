// Plain request/response values shared by the routes (exporter/router.cpp), the admission layer
// and the server (web/), so that both are testable without sockets.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace hwperf {

inline constexpr const char* kTextPlain = "text/plain; charset=utf-8";

struct HttpRequest {
  std::string method;  // "GET", "HEAD", ...
  std::string path;    // without the query string
  std::string accept;
  std::string accept_encoding;
  std::string authorization;  // the Authorization header, "" when absent
  bool has_body = false;      // a Content-Length above 0 or a Transfer-Encoding
  std::string query{};        // after '?', as sent (not decoded); "" when absent
};

struct HttpResponse {
  int status = 200;
  std::string content_type = kTextPlain;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers
  std::string body;
};

}  // namespace hwperf
