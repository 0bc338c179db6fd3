// --web.config.file: TLS and basic authentication in the format of the Prometheus
// exporter-toolkit (node_exporter's web-config.yml), so one file serves a fleet of exporters.
// https://github.com/prometheus/exporter-toolkit/blob/master/docs/web-configuration.md
#pragma once

#include <map>
#include <optional>
#include <string>

#include "common/enum_names.h"

namespace hwperf {

enum class ClientAuth {
  none,                     // NoClientCert
  request,                  // RequestClientCert
  require_any,              // RequireAnyClientCert
  verify_if_given,          // VerifyClientCertIfGiven
  require_and_verify,       // RequireAndVerifyClientCert
};

inline constexpr EnumName<ClientAuth> kClientAuthNames[] = {
    {ClientAuth::none, "NoClientCert"},
    {ClientAuth::request, "RequestClientCert"},
    {ClientAuth::require_any, "RequireAnyClientCert"},
    {ClientAuth::verify_if_given, "VerifyClientCertIfGiven"},
    {ClientAuth::require_and_verify, "RequireAndVerifyClientCert"},
};

enum class TlsVersion { tls10, tls11, tls12, tls13 };
inline constexpr EnumName<TlsVersion> kTlsVersionNames[] = {{TlsVersion::tls10, "TLS10"},
                                                            {TlsVersion::tls11, "TLS11"},
                                                            {TlsVersion::tls12, "TLS12"},
                                                            {TlsVersion::tls13, "TLS13"}};

struct TlsServerConfig {
  std::string cert_file;  // PEM certificate (chain)
  std::string key_file;   // PEM private key
  std::string client_ca_file;
  ClientAuth client_auth = ClientAuth::none;
  TlsVersion min_version = TlsVersion::tls12;  // exporter-toolkit's default
};

struct WebConfigFile {
  std::optional<TlsServerConfig> tls;
  std::map<std::string, std::string> basic_auth_users;  // user -> bcrypt hash
};

// Reads and validates the file: unknown keys, bad values, a missing cert or key file, a hash
// that is not bcrypt, all reported at once as ConfigError with file:line:column. Paths in the file
// are relative to the file's directory, as in exporter-toolkit.
WebConfigFile load_web_config(const std::string& path);

// Whether `hash` has the form of a bcrypt hash ($2a$, $2b$ or $2y$, cost, 53 characters).
bool is_bcrypt_hash(const std::string& hash);

}  // namespace hwperf
