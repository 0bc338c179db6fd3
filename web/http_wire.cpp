#include "web/http_wire.h"

#include <charconv>
#include <string_view>

namespace hwperf {
namespace {

constexpr std::string_view kEndOfLine = "\r\n";
constexpr std::string_view kSeparator = ": ";

// The bytes `headers` take as "Name: value\r\n" lines.
std::size_t header_bytes(const HttpHeaders& headers) {
  std::size_t bytes = 0;
  for (const auto& [name, value] : headers) {
    bytes += name.size() + kSeparator.size() + value.size() + kEndOfLine.size();
  }
  return bytes;
}

void append_header(std::string& out, std::string_view name, std::string_view value) {
  out.append(name).append(kSeparator).append(value).append(kEndOfLine);
}

void append_number(std::string& out, std::size_t number) {
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, number).ptr;
  out.append(digits, static_cast<std::size_t>(end - digits));
}

}  // namespace

const char* reason_phrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 413: return "Payload Too Large";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Unknown";
  }
}

std::string wire_response(const HttpResponse& response, const HttpHeaders& server_headers,
                          bool close, bool head) {
  const bool nosniff =
      !has_header(response.headers, kNoSniff) && !has_header(server_headers, kNoSniff);
  const std::string_view connection = close ? "close" : "keep-alive";
  const std::string_view reason = reason_phrase(response.status);
  // The fixed text of the lines below (names, separators, line ends), numbers at their widest.
  constexpr std::size_t kFixed = 128;
  std::string out;
  out.reserve(kFixed + reason.size() + response.content_type.size() +
              header_bytes(response.headers) + header_bytes(server_headers) +
              (head ? 0 : response.body.size()));
  out.append("HTTP/1.1 ");
  append_number(out, static_cast<std::size_t>(response.status));
  out.append(" ").append(reason).append(kEndOfLine);
  append_header(out, "Content-Type", response.content_type);
  out.append("Content-Length: ");
  append_number(out, response.body.size());
  out.append(kEndOfLine);
  for (const auto& [name, value] : response.headers) append_header(out, name, value);
  for (const auto& [name, value] : server_headers) append_header(out, name, value);
  if (nosniff) append_header(out, kNoSniff, "nosniff");
  append_header(out, "Connection", connection);
  out.append(kEndOfLine);
  if (!head) out.append(response.body);
  return out;
}

}  // namespace hwperf
