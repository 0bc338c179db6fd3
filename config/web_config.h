// --web.config.file: TLS and basic authentication in the format of the Prometheus
// exporter-toolkit (node_exporter's web-config.yml), so one file serves a fleet of exporters.
// https://github.com/prometheus/exporter-toolkit/blob/master/docs/web-configuration.md
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/enum_names.h"
#include "config/key_info.h"

namespace hwperf {

enum class ClientAuth {
  none,                // NoClientCert
  request,             // RequestClientCert
  require_any,         // RequireAnyClientCert
  verify_if_given,     // VerifyClientCertIfGiven
  require_and_verify,  // RequireAndVerifyClientCert
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

// Go's names of the TLS 1.0-1.2 cipher suites (crypto/tls), which exporter-toolkit's cipher_suites
// takes, and OpenSSL's for each. (Go, and so exporter-toolkit, does not let TLS 1.3 suites be
// chosen; neither does this.)
struct CipherSuiteName {
  const char* go;
  const char* openssl;
};
inline constexpr CipherSuiteName kCipherSuiteNames[] = {
    {"TLS_RSA_WITH_3DES_EDE_CBC_SHA", "DES-CBC3-SHA"},
    {"TLS_RSA_WITH_AES_128_CBC_SHA", "AES128-SHA"},
    {"TLS_RSA_WITH_AES_256_CBC_SHA", "AES256-SHA"},
    {"TLS_RSA_WITH_AES_128_CBC_SHA256", "AES128-SHA256"},
    {"TLS_RSA_WITH_AES_128_GCM_SHA256", "AES128-GCM-SHA256"},
    {"TLS_RSA_WITH_AES_256_GCM_SHA384", "AES256-GCM-SHA384"},
    {"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", "ECDHE-ECDSA-AES128-SHA"},
    {"TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", "ECDHE-ECDSA-AES256-SHA"},
    {"TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA", "ECDHE-RSA-DES-CBC3-SHA"},
    {"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "ECDHE-RSA-AES128-SHA"},
    {"TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", "ECDHE-RSA-AES256-SHA"},
    {"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256", "ECDHE-ECDSA-AES128-SHA256"},
    {"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256", "ECDHE-RSA-AES128-SHA256"},
    {"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "ECDHE-RSA-AES128-GCM-SHA256"},
    {"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "ECDHE-ECDSA-AES128-GCM-SHA256"},
    {"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "ECDHE-RSA-AES256-GCM-SHA384"},
    {"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "ECDHE-ECDSA-AES256-GCM-SHA384"},
    {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-RSA-CHACHA20-POLY1305"},
    {"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-ECDSA-CHACHA20-POLY1305"},
};

// exporter-toolkit's curve_preferences names (Go's tls.CurveID) and OpenSSL's group names.
inline constexpr CipherSuiteName kCurveNames[] = {
    {"CurveP256", "P-256"}, {"CurveP384", "P-384"}, {"CurveP521", "P-521"}, {"X25519", "X25519"}};

struct TlsServerConfig {
  std::string cert_file;  // PEM certificate (chain); or cert_pem, given in the file itself
  std::string key_file;   // PEM private key; or key_pem
  std::string cert_pem;
  std::string key_pem;
  std::string client_ca_file;  // PEM CA certificates; or client_ca_pem, given in the file itself
  std::string client_ca_pem;
  ClientAuth client_auth = ClientAuth::none;
  // A client certificate must name one (exporter-toolkit's check: with any client_auth_type that
  // asks for a certificate, and a client that sends none is refused).
  std::vector<std::string> client_allowed_sans;
  TlsVersion min_version = TlsVersion::tls12;  // exporter-toolkit's default
  std::optional<TlsVersion> max_version;       // none: the newest this OpenSSL has
  std::vector<std::string> cipher_suites;      // OpenSSL's names, in order; empty: OpenSSL's
  bool prefer_server_cipher_suites = true;     // exporter-toolkit's default
  std::vector<std::string> curve_groups;       // OpenSSL's names, in order; empty: OpenSSL's
};

// exporter-toolkit's http_server_config: HTTP/2 is an option clients negotiate and this server
// answers HTTP/1.1 either way; headers are added to every response.
inline constexpr const char* kAllowedResponseHeaders[] = {
    "Content-Security-Policy", "X-Frame-Options", "X-Content-Type-Options", "X-XSS-Protection",
    "Strict-Transport-Security"};
struct HttpServerConfig {
  bool http2 = true;
  std::vector<std::pair<std::string, std::string>> headers;
};

// exporter-toolkit's rate_limit: on average one request per interval, bursts of up to `burst`;
// beyond, 429.
struct RateLimit {
  double interval_seconds = 0;
  unsigned burst = 0;
};

struct WebConfigFile {
  std::optional<TlsServerConfig> tls;
  HttpServerConfig http;
  std::optional<RateLimit> rate_limit;
  std::map<std::string, std::string> basic_auth_users;  // user -> bcrypt hash
};

// Reads and validates the file: unknown keys, bad values, a missing cert or key file, a hash
// that is not bcrypt, all reported at once as ConfigError with file:line:column. Paths in the file
// are relative to the file's directory, as in exporter-toolkit.
WebConfigFile load_web_config(const std::string& path);

// Every key of the file, in the order it is read, with what each takes (no defaults: the file
// has no dump).
std::vector<ConfigKeyInfo> describe_web_config_keys();

// Whether `hash` has the form of a bcrypt hash ($2a$, $2b$ or $2y$, cost, 53 characters).
bool is_bcrypt_hash(const std::string& hash);

}  // namespace hwperf
