#include "web/listen_address.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <stdexcept>
#include <string_view>

#include <civetweb.h>

namespace hwperf {
namespace {

bool all_digits(std::string_view text) {
  if (text.empty() || text.size() > 5) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

std::string resolve_host(const std::string& host, const std::string& where) {
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
    throw std::invalid_argument(where + ": cannot resolve \"" + host + "\": " + gai_strerror(rc));
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

}  // namespace

bool http_server_supports_ipv6() { return mg_check_feature(MG_FEATURES_IPV6) != 0; }

ListenAddress ListenAddress::parse(const std::string& text, const std::string& written_as) {
  const std::string where = written_as.empty() ? "--web.listen-address=" + text : written_as;
  const std::string expected = " (expected [HOST]:PORT, e.g. :9477, 127.0.0.1:9477 or [::1]:9477)";
  const auto colon = text.rfind(':');
  if (colon == std::string::npos) throw std::invalid_argument(where + ": no port" + expected);
  ListenAddress address;
  address.text_ = text;
  address.host_ = text.substr(0, colon);
  const std::string port = text.substr(colon + 1);
  if (!all_digits(port) || std::stoul(port) > 65535) {
    throw std::invalid_argument(where + ": bad port \"" + port + "\"" + expected);
  }
  address.port_ = static_cast<unsigned>(std::stoul(port));
  const std::string& host = address.host_;
  if (host.empty()) return address;  // every IPv4 address, like node_exporter's ":9100"
  if (host.front() == '[') {
    if (host.back() != ']' || host.size() < 3) {
      throw std::invalid_argument(where + ": unterminated IPv6 address" + expected);
    }
    in6_addr ignored{};
    if (inet_pton(AF_INET6, host.substr(1, host.size() - 2).c_str(), &ignored) != 1) {
      throw std::invalid_argument(where + ": bad IPv6 address" + expected);
    }
    if (!http_server_supports_ipv6()) {
      throw std::invalid_argument(
          where +
          ": the CivetWeb library this exporter runs with was built without IPv6 support (as "
          "Debian 12's libcivetweb is); listen on an IPv4 address such as :9477 instead");
    }
    address.numeric_host_ = host;
    return address;
  }
  in_addr ignored{};
  address.numeric_host_ =
      inet_pton(AF_INET, host.c_str(), &ignored) == 1 ? host : resolve_host(host, where);
  return address;
}

std::string ListenAddress::civetweb_ports() const {
  const std::string port = std::to_string(port_);
  return numeric_host_.empty() ? port : numeric_host_ + ":" + port;
}

std::string ListenAddress::reachable_host() const {
  if (numeric_host_.empty() || numeric_host_ == "0.0.0.0") return "127.0.0.1";
  if (numeric_host_ == "[::]") return "::1";
  if (numeric_host_.front() == '[') return numeric_host_.substr(1, numeric_host_.size() - 2);
  return numeric_host_;
}

}  // namespace hwperf
