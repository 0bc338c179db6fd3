// --web.listen-address ([HOST]:PORT) parsed once, at startup, into what binding, CivetWeb, the
// log and the shutdown wake-up each need.
#pragma once

#include <string>

namespace hwperf {

class ListenAddress {
 public:
  // Throws std::invalid_argument naming the address and where it was written (`written_as`,
  // default "--web.listen-address=TEXT") with the expected form. A host name is resolved here,
  // once (CivetWeb binds numeric addresses only).
  static ListenAddress parse(const std::string& text, const std::string& written_as = "");

  const std::string& text() const { return text_; }  // as written: ":9477"
  const std::string& host() const { return host_; }  // as written; "" for every IPv4 address
  // "" (every IPv4 address), "127.0.0.1" or "[::1]".
  const std::string& numeric_host() const { return numeric_host_; }
  unsigned port() const { return port_; }  // 0: a free port
  // CivetWeb's listening_ports syntax: "9477", "127.0.0.1:9477", "[::1]:9477".
  std::string civetweb_ports() const;
  // The numeric address (without brackets) that reaches the bound socket from this host: the
  // loopback address for a wildcard.
  std::string reachable_host() const;

 private:
  std::string text_;
  std::string host_;
  std::string numeric_host_;
  unsigned port_ = 0;
};

bool http_server_supports_ipv6();

}  // namespace hwperf
