// Plain request/response values shared by the router (app.cpp) and the server (http_server.cpp),
// so routing is testable without sockets.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace hwperf {

struct HttpRequest {
  std::string method;  // "GET", "HEAD", ...
  std::string path;    // without the query string
  std::string accept;
  std::string accept_encoding;
  std::string authorization;  // the Authorization header, "" when absent
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers
  std::string body;
};

}  // namespace hwperf
