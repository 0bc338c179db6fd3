// A response as it goes on the wire: the status line, the headers and the body in one buffer,
// so that one write sends it all. Pure: no sockets, no CivetWeb (web/http_server.cpp writes it).
#pragma once

#include <string>

#include "web/http.h"

namespace hwperf {

// "OK" for 200, and so on for every status the exporter answers; "Unknown" for the others.
const char* reason_phrase(int status);

// HTTP/1.1 `response`: Content-Type and Content-Length, the response's own headers, then the
// server's (`server_headers`, http_server_config.headers), X-Content-Type-Options: nosniff unless
// either set it (no browser may take an error's text, which can echo what the client sent, for
// HTML), and Connection: close when `close`, else keep-alive; then the body, unless `head` (a
// HEAD request: the same headers, no body). Made in one allocation.
std::string wire_response(const HttpResponse& response, const HttpHeaders& server_headers,
                          bool close, bool head);

}  // namespace hwperf
