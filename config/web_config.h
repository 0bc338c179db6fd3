// --web.config.file: TLS and basic authentication in the format of the Prometheus
// exporter-toolkit (node_exporter's web-config.yml), so one file serves a fleet of exporters.
// https://github.com/prometheus/exporter-toolkit/blob/master/docs/web-configuration.md
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace hwperf {

enum class ClientAuth {
  none,                     // NoClientCert
  request,                  // RequestClientCert
  require_any,              // RequireAnyClientCert
  verify_if_given,          // VerifyClientCertIfGiven
  require_and_verify,       // RequireAndVerifyClientCert
};

enum class TlsVersion { tls10, tls11, tls12, tls13 };

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

// Whether an Authorization header value ("Basic base64(user:password)") names a configured user
// with the right password. The password is checked with bcrypt at the cost stored in the hash,
// and the hashes are compared in constant time; an unknown user costs a bcrypt run as well, so
// the time taken does not say which users exist. True when no users are configured.
bool basic_auth_allows(const WebConfigFile& config, std::string_view authorization);

// Whether `password` matches the bcrypt `hash` ($2a$, $2b$ or $2y$).
bool bcrypt_matches(const std::string& password, const std::string& hash);

}  // namespace hwperf
