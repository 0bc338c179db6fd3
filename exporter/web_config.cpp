#include "exporter/web_config.h"

#include <crypt.h>
#include <sys/stat.h>

#include <array>
#include <filesystem>
#include <functional>
#include <set>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "common/text.h"
#include "config/errors.h"

namespace hwperf {
namespace {

namespace fs = std::filesystem;

// A web config is a few lines; anything larger is not one (and must not be read into memory).
constexpr std::uintmax_t kMaxFileBytes = 1 << 20;

struct Reader {
  std::string file;
  fs::path directory;
  std::vector<std::string> problems;

  std::string where(const YAML::Node& node) const {
    const auto mark = node.Mark();
    return file + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
  }
  void add(const YAML::Node& node, const std::string& message) {
    problems.push_back(where(node) + ": " + message);
  }

  // Visits a mapping's keys; unknown keys are errors naming the ones that exist.
  void each_key(const YAML::Node& map, const std::string& path,
                const std::vector<std::pair<std::string, std::function<void(const YAML::Node&)>>>&
                    handlers,
                const std::set<std::string>& unsupported = {}) {
    if (!map.IsMap()) {
      add(map, path + ": expected a mapping");
      return;
    }
    std::string known;
    for (const auto& [key, handler] : handlers) known += (known.empty() ? "" : ", ") + key;
    for (const auto& entry : map) {
      if (!entry.first.IsScalar()) {
        add(entry.first, path + ": keys must be plain names");
        continue;
      }
      const auto key = entry.first.as<std::string>();
      bool handled = false;
      for (const auto& [name, handler] : handlers) {
        if (name == key) {
          handler(entry.second);
          handled = true;
        }
      }
      if (handled) continue;
      if (unsupported.count(key) != 0) {
        add(entry.first, path + "." + key +
                             " is an exporter-toolkit setting this exporter does not support; "
                             "remove it (supported: " + known + ")");
      } else {
        add(entry.first, "unknown key \"" + key + "\" in " + path + " (expected one of: " +
                             known + ")");
      }
    }
  }

  std::string scalar(const YAML::Node& node, const std::string& path) {
    if (!node.IsScalar()) {
      add(node, path + ": expected a string");
      return "";
    }
    return node.as<std::string>();
  }

  // A file the exporter must read at startup: relative paths are taken from the config's folder.
  std::string readable_file(const YAML::Node& node, const std::string& path) {
    const std::string value = scalar(node, path);
    if (value.empty()) return value;
    fs::path named = value;
    if (named.is_relative()) named = directory / named;
    std::error_code error;
    if (!fs::is_regular_file(named, error)) {
      add(node, path + ": " + named.string() + " is not a readable regular file");
    }
    return named.string();
  }
};

template <typename E>
struct Name {
  const char* text;
  E value;
};

constexpr Name<ClientAuth> kClientAuthNames[] = {
    {"NoClientCert", ClientAuth::none},
    {"RequestClientCert", ClientAuth::request},
    {"RequireAnyClientCert", ClientAuth::require_any},
    {"VerifyClientCertIfGiven", ClientAuth::verify_if_given},
    {"RequireAndVerifyClientCert", ClientAuth::require_and_verify},
};
constexpr Name<TlsVersion> kTlsVersionNames[] = {
    {"TLS10", TlsVersion::tls10},
    {"TLS11", TlsVersion::tls11},
    {"TLS12", TlsVersion::tls12},
    {"TLS13", TlsVersion::tls13},
};

template <typename E, std::size_t N>
void read_name(Reader& reader, const YAML::Node& node, const std::string& path,
               const Name<E> (&names)[N], E& out) {
  const std::string text = reader.scalar(node, path);
  std::string expected;
  for (const auto& name : names) {
    if (text == name.text) {
      out = name.value;
      return;
    }
    expected += (expected.empty() ? "" : ", ") + std::string(name.text);
  }
  reader.add(node, path + ": expected one of " + expected + ", got \"" + text + "\"");
}

bool is_bcrypt_hash(const std::string& hash) {
  // $2b$NN$ + 53 characters of salt and digest.
  return hash.size() == 60 && hash[0] == '$' && hash[1] == '2' &&
         (hash[2] == 'a' || hash[2] == 'b' || hash[2] == 'y') && hash[3] == '$' &&
         hash[6] == '$';
}

std::optional<std::string> base64_decode(std::string_view text) {
  auto value_of = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out;
  unsigned buffer = 0;
  int bits = 0;
  std::size_t padding = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '=') {
      if (i + 2 < text.size()) return std::nullopt;  // '=' only in the last two places
      ++padding;
      continue;
    }
    if (padding > 0) return std::nullopt;
    const int v = value_of(c);
    if (v < 0) return std::nullopt;
    buffer = (buffer << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((buffer >> bits) & 0xFF);
    }
  }
  return out;
}

bool equal_in_constant_time(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char difference = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    difference |= static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return difference == 0;
}

// Checked against when the user is unknown, so that the answer takes as long as for a known one.
// The hash of a random password that nobody knows, at exporter-toolkit's usual cost of 10.
const std::string kUnknownUserHash = "$2b$10$FNqeph08gWOmgVpErUxMzOHE54ghXxUFa71po854qekT5Aep6f/62";

}  // namespace

bool bcrypt_matches(const std::string& password, const std::string& hash) {
  if (!is_bcrypt_hash(hash)) return false;
  crypt_data data{};
  // libxcrypt computes bcrypt at the cost written in the hash (its "$2b$NN$" part).
  const char* computed = crypt_r(password.c_str(), hash.c_str(), &data);
  if (computed == nullptr || computed[0] == '*') return false;
  return equal_in_constant_time(computed, hash);
}

bool basic_auth_allows(const WebConfigFile& config, std::string_view authorization) {
  if (config.basic_auth_users.empty()) return true;
  const std::string_view scheme = "Basic ";
  if (authorization.size() <= scheme.size() ||
      to_lower(authorization.substr(0, scheme.size())) != "basic ") {
    return false;
  }
  const auto decoded = base64_decode(trim(authorization.substr(scheme.size())));
  if (!decoded) return false;
  const auto colon = decoded->find(':');
  if (colon == std::string::npos) return false;
  const std::string user = decoded->substr(0, colon);
  const std::string password = decoded->substr(colon + 1);
  const auto found = config.basic_auth_users.find(user);
  if (found == config.basic_auth_users.end()) {
    bcrypt_matches(password, kUnknownUserHash);
    return false;
  }
  return bcrypt_matches(password, found->second);
}

WebConfigFile load_web_config(const std::string& path) {
  std::error_code error;
  const auto status = fs::status(path, error);
  if (error || !fs::is_regular_file(status)) {
    throw ConfigError({path + ": --web.config.file must name a readable regular file" +
                       (error ? " (" + error.message() + ")" : std::string())});
  }
  if (fs::file_size(path, error) > kMaxFileBytes) {
    throw ConfigError({path + ": larger than 1 MiB; not a web config file"});
  }
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    throw ConfigError({path + ":" + std::to_string(e.mark.line + 1) + ":" +
                       std::to_string(e.mark.column + 1) + ": " + e.msg});
  }
  Reader reader{path, fs::path(path).parent_path(), {}};
  WebConfigFile config;
  if (root.IsNull()) return config;  // an empty file: plain HTTP, no authentication
  reader.each_key(
      root, "web config",
      {{"tls_server_config",
        [&](const YAML::Node& node) {
          TlsServerConfig tls;
          reader.each_key(
              node, "tls_server_config",
              {{"cert_file", [&](const YAML::Node& n) {
                  tls.cert_file = reader.readable_file(n, "tls_server_config.cert_file");
                }},
               {"key_file", [&](const YAML::Node& n) {
                  tls.key_file = reader.readable_file(n, "tls_server_config.key_file");
                }},
               {"client_ca_file", [&](const YAML::Node& n) {
                  tls.client_ca_file = reader.readable_file(n, "tls_server_config.client_ca_file");
                }},
               {"client_auth_type", [&](const YAML::Node& n) {
                  read_name(reader, n, "tls_server_config.client_auth_type", kClientAuthNames,
                            tls.client_auth);
                }},
               {"min_version", [&](const YAML::Node& n) {
                  read_name(reader, n, "tls_server_config.min_version", kTlsVersionNames,
                            tls.min_version);
                }}},
              {"cert", "key", "max_version", "cipher_suites", "curve_preferences",
               "prefer_server_cipher_suites", "client_allowed_sans"});
          if (tls.cert_file.empty() || tls.key_file.empty()) {
            reader.add(node, "tls_server_config needs both cert_file and key_file");
          }
          const bool verifies = tls.client_auth == ClientAuth::verify_if_given ||
                                tls.client_auth == ClientAuth::require_and_verify;
          if (verifies && tls.client_ca_file.empty()) {
            reader.add(node, "tls_server_config.client_auth_type verifies client certificates "
                             "and needs client_ca_file");
          }
          config.tls = std::move(tls);
        }},
       {"basic_auth_users",
        [&](const YAML::Node& node) {
          if (!node.IsMap()) {
            reader.add(node, "basic_auth_users: expected a mapping of user names to bcrypt hashes");
            return;
          }
          for (const auto& entry : node) {
            if (!entry.first.IsScalar()) {
              reader.add(entry.first, "basic_auth_users: a user name must be a plain name");
              continue;
            }
            const auto user = entry.first.as<std::string>();
            const std::string hash = reader.scalar(entry.second, "basic_auth_users." + user);
            if (user.empty() || user.find(':') != std::string::npos) {
              reader.add(entry.first, "basic_auth_users: a user name must be non-empty and "
                                      "contain no ':'");
            }
            if (!is_bcrypt_hash(hash)) {
              reader.add(entry.second, "basic_auth_users." + user +
                                           ": expected a bcrypt hash ($2b$..., 60 characters; "
                                           "htpasswd -nBC 10 USER makes one)");
            }
            config.basic_auth_users[user] = hash;
          }
        }}},
      {"http_server_config", "rate_limit"});
  if (!reader.problems.empty()) throw ConfigError(std::move(reader.problems));
  return config;
}

}  // namespace hwperf
