// Plain request/response values shared by the routes (exporter/router.cpp), the admission layer
// and the server (web/), so that both are testable without sockets.
#pragma once

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hwperf {

inline constexpr const char* kTextPlain = "text/plain; charset=utf-8";
// Sent with every response that does not set it itself (web/http_server.cpp).
inline constexpr const char* kNoSniff = "X-Content-Type-Options";

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;
// Whether `headers` has one named `name`, in any case (header names are case-insensitive).
inline bool has_header(const HttpHeaders& headers, std::string_view name) {
  const auto same = [name](const std::string& other) {
    return other.size() == name.size() &&
           std::equal(other.begin(), other.end(), name.begin(), [](char a, char b) {
             return std::tolower(static_cast<unsigned char>(a)) ==
                    std::tolower(static_cast<unsigned char>(b));
           });
  };
  return std::any_of(headers.begin(), headers.end(),
                     [&](const auto& header) { return same(header.first); });
}

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
  HttpHeaders headers;  // extra headers
  std::string body;
};

}  // namespace hwperf
