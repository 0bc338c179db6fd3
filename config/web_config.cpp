#include "config/web_config.h"

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <functional>
#include <iterator>
#include <optional>

#include "common/files.h"
#include "common/text.h"
#include "config/errors.h"
#include "config/yaml_reader.h"

namespace hwperf {
namespace {

namespace fs = std::filesystem;
using namespace yaml_reader;

// A web config is a few lines; anything larger is not one (and must not be read into memory).
constexpr std::size_t kMaxFileBytes = 1 << 20;
// The longest value http_server_config.headers takes (see its reader).
constexpr std::size_t kMaxHeaderValueBytes = 8192;

// A file the exporter must read at startup: relative paths are taken from the config's folder.
Mapping::Handler read_file_path(Problems& problems, const fs::path& directory,
                                const std::string& path, std::string& out) {
  return [&problems, directory, path, &out](const YAML::Node& node) {
    std::string value;
    read_string(problems, path, value)(node);
    if (value.empty()) return;
    fs::path named = value;
    if (named.is_relative()) named = directory / named;
    std::error_code error;
    if (!fs::is_regular_file(named, error)) {
      problems.add(problems.at(node),
                   path + ": " + named.string() + " is not a readable regular file");
    }
    out = named.string();
  };
}

// A sequence of strings, each checked (and perhaps translated) by `accept`, which returns the
// value to keep or nullopt for one it refuses (it reports why).
Mapping::Handler read_list(
    Problems& problems, const std::string& path, std::vector<std::string>& out,
    std::function<std::optional<std::string>(const YAML::Node&, const std::string&)> accept) {
  return [&problems, path, &out, accept](const YAML::Node& node) {
    if (!node.IsSequence()) {
      problems.add(problems.at(node), path + ": expected a list");
      return;
    }
    for (const auto& item : node) {
      if (!is_scalar(problems, item, path, "a string")) continue;
      if (auto value = accept(item, item.as<std::string>())) out.push_back(std::move(*value));
    }
  };
}

// A name from one of the Go-to-OpenSSL tables.
std::function<std::optional<std::string>(const YAML::Node&, const std::string&)> translate(
    Problems& problems, const std::string& path, const CipherSuiteName* table, std::size_t size) {
  return [&problems, path, table, size](const YAML::Node& item,
                                        const std::string& text) -> std::optional<std::string> {
    std::string names;
    for (std::size_t i = 0; i < size; ++i) {
      if (text == table[i].go) return std::string(table[i].openssl);
      names += std::string(i == 0 ? "" : ", ") + table[i].go;
    }
    problems.add(item.Mark(),
                 path + ": unknown name \"" + text + "\" (expected one of " + names + ")");
    return std::nullopt;
  };
}

void read_tls(Problems& problems, const fs::path& directory, const YAML::Node& node,
              WebConfigFile& config) {
  TlsServerConfig tls;
  const std::string path = "tls_server_config";
  TlsVersion max_version = TlsVersion::tls13;
  bool has_max_version = false;
  Mapping(problems, path)
      .on("cert_file", read_file_path(problems, directory, path + ".cert_file", tls.cert_file))
      .on("key_file", read_file_path(problems, directory, path + ".key_file", tls.key_file))
      .on("cert", read_string(problems, path + ".cert", tls.cert_pem))
      .on("key", read_string(problems, path + ".key", tls.key_pem))
      .on("client_ca_file",
          read_file_path(problems, directory, path + ".client_ca_file", tls.client_ca_file))
      .on("client_ca", read_string(problems, path + ".client_ca", tls.client_ca_pem))
      .on("client_auth_type",
          read_enum(problems, path + ".client_auth_type", tls.client_auth, kClientAuthNames))
      .on("client_allowed_sans",
          read_list(problems, path + ".client_allowed_sans", tls.client_allowed_sans,
                    [](const YAML::Node&, const std::string& text) { return text; }))
      .on("min_version",
          read_enum(problems, path + ".min_version", tls.min_version, kTlsVersionNames))
      .on("max_version",
          [&](const YAML::Node& value) {
            has_max_version = true;
            read_enum(problems, path + ".max_version", max_version, kTlsVersionNames)(value);
          })
      .on("cipher_suites", read_list(problems, path + ".cipher_suites", tls.cipher_suites,
                                     translate(problems, path + ".cipher_suites", kCipherSuiteNames,
                                               std::size(kCipherSuiteNames))))
      .on("prefer_server_cipher_suites", read_bool(problems, path + ".prefer_server_cipher_suites",
                                                   tls.prefer_server_cipher_suites))
      .on("curve_preferences", read_list(problems, path + ".curve_preferences", tls.curve_groups,
                                         translate(problems, path + ".curve_preferences",
                                                   kCurveNames, std::size(kCurveNames))))
      .visit(node);
  if (has_max_version) {
    tls.max_version = max_version;
    if (static_cast<int>(max_version) < static_cast<int>(tls.min_version)) {
      problems.add(problems.at(node),
                   path + ".max_version " + name_of(kTlsVersionNames, max_version) +
                       " is below min_version " + name_of(kTlsVersionNames, tls.min_version) +
                       " (TLS12 unless set): no client could connect; lower min_version too");
    }
  }
  if (!tls.cert_file.empty() && !tls.cert_pem.empty()) {
    problems.add(problems.at(node), path + ": cert and cert_file are exclusive; give one");
  }
  if (!tls.key_file.empty() && !tls.key_pem.empty()) {
    problems.add(problems.at(node), path + ": key and key_file are exclusive; give one");
  }
  if ((tls.cert_file.empty() && tls.cert_pem.empty()) ||
      (tls.key_file.empty() && tls.key_pem.empty())) {
    problems.add(problems.at(node), path +
                                        " needs a certificate (cert_file or cert) and a key "
                                        "(key_file or key)");
  }
  if (!tls.client_ca_file.empty() && !tls.client_ca_pem.empty()) {
    problems.add(problems.at(node),
                 path + ": client_ca and client_ca_file are exclusive; give one");
  }
  const bool has_client_ca = !tls.client_ca_file.empty() || !tls.client_ca_pem.empty();
  const bool verifies = tls.client_auth == ClientAuth::verify_if_given ||
                        tls.client_auth == ClientAuth::require_and_verify;
  if (verifies && !has_client_ca) {
    problems.add(problems.at(node), path +
                                        ".client_auth_type verifies client certificates and "
                                        "needs client_ca_file or client_ca");
  }
  // As exporter-toolkit: a CA with no policy that asks for certificates would check nobody.
  if (has_client_ca && tls.client_auth == ClientAuth::none) {
    problems.add(problems.at(node), path +
                                        ": a client CA is configured but client_auth_type asks "
                                        "for no client certificate (NoClientCert)");
  }
  // exporter-toolkit ignores them then (Go asks for no certificate); restricting clients while
  // letting every one in would be a silent hole, so it is refused here.
  if (!tls.client_allowed_sans.empty() && tls.client_auth == ClientAuth::none) {
    problems.add(problems.at(node), path +
                                        ".client_allowed_sans needs a client_auth_type that asks "
                                        "for client certificates");
  }
  config.tls = std::move(tls);
}

void read_http_server(Problems& problems, const YAML::Node& node, WebConfigFile& config) {
  const std::string path = "http_server_config";
  Mapping(problems, path)
      .on("http2", read_bool(problems, path + ".http2", config.http.http2))
      .on("headers",
          [&](const YAML::Node& headers) {
            if (!headers.IsMap()) {
              problems.add(problems.at(headers), path +
                                                     ".headers: expected a mapping of header "
                                                     "names to values");
              return;
            }
            for (const auto& entry : headers) {
              const auto name = entry.first.as<std::string>("");
              const bool allowed = std::find_if(std::begin(kAllowedResponseHeaders),
                                                std::end(kAllowedResponseHeaders),
                                                [&](const char* known) { return name == known; }) !=
                                   std::end(kAllowedResponseHeaders);
              if (!allowed) {
                std::string names;
                for (const char* known : kAllowedResponseHeaders) {
                  names += std::string(names.empty() ? "" : ", ") + known;
                }
                problems.add(entry.first.Mark(), path + ".headers: \"" + name +
                                                     "\" cannot be set (expected one of " + names +
                                                     ")");
                continue;
              }
              std::string value;
              read_nonempty_string(problems, path + ".headers." + name, value)(entry.second);
              // Control characters (NUL, CR, LF, ...) would break the response for every client.
              if (const auto control = control_character(value, true)) {
                problems.add(entry.second.Mark(), path + ".headers." + name +
                                                      ": one line of printable text only (no "
                                                      "control characters; " +
                                                      *control + ")");
                continue;
              }
              // Clients bound a header line (Python's http.client at 64 KiB, many proxies at
              // 8 KiB): a longer value would make the response unreadable to some of them.
              if (value.size() > kMaxHeaderValueBytes) {
                problems.add(entry.second.Mark(), path + ".headers." + name + ": a value of " +
                                                      std::to_string(value.size()) +
                                                      " bytes; at most " +
                                                      std::to_string(kMaxHeaderValueBytes));
                continue;
              }
              const bool repeated =
                  std::any_of(config.http.headers.begin(), config.http.headers.end(),
                              [&](const auto& header) { return header.first == name; });
              if (repeated) {
                problems.add(entry.first.Mark(), path + ".headers: \"" + name +
                                                     "\" is set twice; which value would hold?");
                continue;
              }
              if (!value.empty()) config.http.headers.emplace_back(name, value);
            }
          })
      .visit(node);
}

void read_rate_limit(Problems& problems, const YAML::Node& node, WebConfigFile& config) {
  const std::string path = "rate_limit";
  RateLimit limit;
  std::string interval;
  double burst = 0;
  Mapping(problems, path)
      .on("interval", read_string(problems, path + ".interval", interval))
      .on("burst", read_non_negative(problems, path + ".burst", burst))
      .visit(node);
  // A Go duration, as exporter-toolkit reads it ("1h30m", "1.5s").
  const auto interval_seconds = parse_go_duration_seconds(interval);
  if (!interval_seconds || !(*interval_seconds > 0)) {
    problems.add(problems.at(node), path +
                                        ".interval: expected a positive Go duration, such as "
                                        "100ms, 1.5s or 1h30m");
  } else {
    limit.interval_seconds = *interval_seconds;
  }
  if (burst < 1 || burst > 1e6 || burst != static_cast<double>(static_cast<unsigned>(burst))) {
    problems.add(problems.at(node), path + ".burst: expected a whole number from 1 to 1000000");
  } else {
    limit.burst = static_cast<unsigned>(burst);
  }
  config.rate_limit = limit;
}

// User names are the keys here, so this mapping has no fixed schema.
void read_users(Problems& problems, const YAML::Node& node, WebConfigFile& config) {
  if (!node.IsMap()) {
    problems.add(problems.at(node),
                 "basic_auth_users: expected a mapping of user names to bcrypt hashes");
    return;
  }
  for (const auto& entry : node) {
    if (!entry.first.IsScalar()) {
      problems.add(entry.first.Mark(), "basic_auth_users: a user name must be a plain name");
      continue;
    }
    const auto user = entry.first.as<std::string>();
    std::string hash;
    read_string(problems, "basic_auth_users." + user, hash)(entry.second);
    if (user.empty() || user.find(':') != std::string::npos) {
      problems.add(entry.first.Mark(),
                   "basic_auth_users: a user name must be non-empty and contain no ':'");
    }
    if (!is_bcrypt_hash(hash)) {
      problems.add(entry.second.Mark(), "basic_auth_users." + user +
                                            ": expected a bcrypt hash that can match ($2b$NN$..., "
                                            "60 characters, cost NN from 04 to 31; htpasswd -nBC "
                                            "10 USER makes one)");
    }
    if (!config.basic_auth_users.emplace(user, hash).second) {
      problems.add(entry.first.Mark(), "basic_auth_users: user \"" + user +
                                           "\" is listed twice; which hash would hold?");
    }
  }
}

void read_document(Problems& problems, const fs::path& directory, const YAML::Node& root,
                   WebConfigFile& config) {
  Mapping(problems, "web config")
      .on("tls_server_config",
          [&](const YAML::Node& node) { read_tls(problems, directory, node, config); })
      .on("basic_auth_users", [&](const YAML::Node& node) { read_users(problems, node, config); })
      .on("http_server_config",
          [&](const YAML::Node& node) { read_http_server(problems, node, config); })
      .on("rate_limit", [&](const YAML::Node& node) { read_rate_limit(problems, node, config); })
      .visit(root);
}

}  // namespace

bool is_bcrypt_hash(const std::string& hash) {
  if (hash.size() != 60 || hash[0] != '$' || hash[1] != '2' ||
      (hash[2] != 'a' && hash[2] != 'b' && hash[2] != 'y') || hash[3] != '$' || hash[6] != '$') {
    return false;
  }
  // A cost outside 04-31, or a salt and digest outside bcrypt's alphabet, can never match:
  // libxcrypt refuses such a setting, so every password would be wrong.
  if (hash[4] < '0' || hash[4] > '9' || hash[5] < '0' || hash[5] > '9') return false;
  const int cost = (hash[4] - '0') * 10 + (hash[5] - '0');
  if (cost < 4 || cost > 31) return false;
  return std::all_of(hash.begin() + 7, hash.end(), [](char c) {
    return c == '.' || c == '/' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
           (c >= '0' && c <= '9');
  });
}

WebConfigFile load_web_config(const std::string& path) {
  const auto text = read_regular_file(path, kMaxFileBytes);
  if (text.error == EFBIG) {
    throw ConfigError({path + ": larger than " + std::to_string(kMaxFileBytes >> 20) +
                       " MiB; not a web config file"});
  }
  if (!text.ok()) {
    throw ConfigError({path + ": --web.config.file must name a readable regular file (" +
                       errno_text(text.error) + ")"});
  }
  Problems problems(path);
  WebConfigFile config;
  const fs::path directory = fs::path(path).parent_path();
  try {
    read_document(problems, directory, YAML::Load(text.value), config);
  } catch (const YAML::Exception& e) {
    problems.add(e.mark, "invalid YAML: " + e.msg);
  }
  if (!problems.list().empty()) throw ConfigError(problems.list());
  return config;
}

std::vector<ConfigKeyInfo> describe_web_config_keys() {
  std::vector<ConfigKeyInfo> keys;
  WebConfigFile config;
  Problems problems("");
  problems.describe_into(&keys);
  read_document(problems, fs::path(), YAML::Node(), config);
  return keys;
}

}  // namespace hwperf
