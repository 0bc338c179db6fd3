#include "exporter/basic_auth.h"

#include <crypt.h>

#include <optional>

#include "common/text.h"

namespace hwperf {
namespace {

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

}  // namespace hwperf
