#include "config/web_config.h"

#include <cerrno>
#include <filesystem>

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

// Settings of exporter-toolkit's format this exporter does not implement: refused by name, so a
// file written for node_exporter never half-applies silently.
constexpr const char* kNotImplemented =
    "an exporter-toolkit setting this exporter does not support; remove it";

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
      problems.add(problems.at(node), path + ": " + named.string() + " is not a readable regular file");
    }
    out = named.string();
  };
}

void read_tls(Problems& problems, const fs::path& directory, const YAML::Node& node,
              WebConfigFile& config) {
  TlsServerConfig tls;
  const std::string path = "tls_server_config";
  Mapping(problems, path)
      .on("cert_file", read_file_path(problems, directory, path + ".cert_file", tls.cert_file))
      .on("key_file", read_file_path(problems, directory, path + ".key_file", tls.key_file))
      .on("client_ca_file",
          read_file_path(problems, directory, path + ".client_ca_file", tls.client_ca_file))
      .on("client_auth_type",
          read_enum(problems, path + ".client_auth_type", tls.client_auth, kClientAuthNames))
      .on("min_version", read_enum(problems, path + ".min_version", tls.min_version,
                                   kTlsVersionNames))
      .unsupported("cert", kNotImplemented)
      .unsupported("key", kNotImplemented)
      .unsupported("max_version", kNotImplemented)
      .unsupported("cipher_suites", kNotImplemented)
      .unsupported("curve_preferences", kNotImplemented)
      .unsupported("prefer_server_cipher_suites", kNotImplemented)
      .unsupported("client_allowed_sans", kNotImplemented)
      .visit(node);
  if (tls.cert_file.empty() || tls.key_file.empty()) {
    problems.add(problems.at(node), path + " needs both cert_file and key_file");
  }
  const bool verifies = tls.client_auth == ClientAuth::verify_if_given ||
                        tls.client_auth == ClientAuth::require_and_verify;
  if (verifies && tls.client_ca_file.empty()) {
    problems.add(problems.at(node), path + ".client_auth_type verifies client certificates and "
                                           "needs client_ca_file");
  }
  config.tls = std::move(tls);
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
                                            ": expected a bcrypt hash ($2b$..., 60 characters; "
                                            "htpasswd -nBC 10 USER makes one)");
    }
    config.basic_auth_users[user] = hash;
  }
}

}  // namespace

bool is_bcrypt_hash(const std::string& hash) {
  return hash.size() == 60 && hash[0] == '$' && hash[1] == '2' &&
         (hash[2] == 'a' || hash[2] == 'b' || hash[2] == 'y') && hash[3] == '$' &&
         hash[6] == '$';
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
    const YAML::Node root = YAML::Load(text.value);
    Mapping(problems, "web config")
        .on("tls_server_config",
            [&](const YAML::Node& node) { read_tls(problems, directory, node, config); })
        .on("basic_auth_users", [&](const YAML::Node& node) { read_users(problems, node, config); })
        .unsupported("http_server_config", kNotImplemented)
        .unsupported("rate_limit", kNotImplemented)
        .visit(root);
  } catch (const YAML::Exception& e) {
    problems.add(e.mark, "invalid YAML: " + e.msg);
  }
  if (!problems.list().empty()) throw ConfigError(problems.list());
  return config;
}

}  // namespace hwperf
