#include "web/basic_auth.h"

#include <crypt.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <vector>

#include "config/errors.h"

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

// Refused verdicts kept: enough for every misconfigured client a node sees, small enough that a
// flood of random passwords costs kilobytes.
constexpr std::size_t kRefusedKept = 4096;
// A check that takes longer than this makes each scrape (and each attacker's guess) a denial of
// service against the host being measured.
constexpr double kMaxSecondsPerCheck = 1.0;

unsigned cost_of(const std::string& hash) {
  return static_cast<unsigned>((hash[4] - '0') * 10 + (hash[5] - '0'));
}

std::array<unsigned char, 32> random_bytes() {
  std::array<unsigned char, 32> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
    throw std::runtime_error("basic authentication: no random bytes from OpenSSL");
  }
  return bytes;
}

// Seconds one bcrypt check at cost 4 takes here: the quickest of a few runs, measured once per
// process (a web config may list thousands of users, and each would otherwise pay the runs).
std::atomic<std::uint64_t> calibration_runs{0};

double seconds_at_cost_4() {
  static const double quickest = [] {
    const std::string hash =
        "$2b$04$" + std::string(53, '.').replace(0, 22, "abcdefghijklmnopqrstuu");
    double best = 1e9;
    for (int run = 0; run < 3; ++run) {
      crypt_data data{};
      const auto start = std::chrono::steady_clock::now();
      crypt_r("probe", hash.c_str(), &data);
      ++calibration_runs;
      best = std::min(
          best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    return best;
  }();
  return quickest;
}

// Seconds one bcrypt check takes here at `cost`: each step above 4 doubles the work.
double seconds_at_cost(unsigned cost) {
  return seconds_at_cost_4() * std::ldexp(1.0, static_cast<int>(cost) - 4);
}

}  // namespace

std::uint64_t bcrypt_calibration_runs() { return calibration_runs.load(); }

bool bcrypt_matches(const std::string& password, const std::string& hash) {
  if (!is_bcrypt_hash(hash)) return false;
  crypt_data data{};
  // libxcrypt computes bcrypt at the cost written in the hash (its "$2b$NN$" part).
  const char* computed = crypt_r(password.c_str(), hash.c_str(), &data);
  if (computed == nullptr || computed[0] == '*') return false;
  return equal_in_constant_time(computed, hash);
}

BasicAuth::BasicAuth(const std::map<std::string, std::string>& users)
    : users_(users), secret_(random_bytes()) {
  if (users_.empty()) return;
  std::vector<std::string> problems;
  unsigned highest = 4;
  for (const auto& [user, hash] : users_) {
    if (!is_bcrypt_hash(hash)) {
      problems.push_back("basic_auth_users." + user + ": not a bcrypt hash that can ever match");
      continue;
    }
    highest = std::max(highest, cost_of(hash));
  }
  for (const auto& [user, hash] : users_) {
    if (!is_bcrypt_hash(hash)) continue;
    const double seconds = seconds_at_cost(cost_of(hash));
    if (seconds > kMaxSecondsPerCheck) {
      unsigned fits = cost_of(hash);
      while (fits > 4 && seconds_at_cost(fits) > kMaxSecondsPerCheck) --fits;
      problems.push_back(
          "basic_auth_users." + user + ": bcrypt cost " + std::to_string(cost_of(hash)) +
          " takes about " + std::to_string(static_cast<long long>(seconds)) +
          " s per check on this machine, and every scrape (or a client guessing "
          "passwords) would pay it; make the hash with a cost of at most " +
          std::to_string(fits) + " (htpasswd -nBC " + std::to_string(fits) + " USER)");
    }
  }
  if (!problems.empty()) throw ConfigError(std::move(problems));
  // A hash nobody knows the password of, at the highest cost configured: an unknown user's
  // answer takes as long as a known user's.
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  const auto entropy = random_bytes();
  if (crypt_gensalt_rn("$2b$", highest, reinterpret_cast<const char*>(entropy.data()), 16, salt,
                       sizeof salt) == nullptr) {
    throw std::runtime_error("basic authentication: crypt_gensalt_rn failed");
  }
  crypt_data data{};
  const auto unknown = random_bytes();
  std::string password;
  for (unsigned char byte : unknown) password += static_cast<char>('a' + byte % 26);
  const char* made = crypt_r(password.c_str(), salt, &data);
  if (made == nullptr || made[0] == '*') {
    throw std::runtime_error("basic authentication: crypt_r could not make a bcrypt hash");
  }
  unknown_user_hash_ = made;
  for (const auto& [user, hash] : users_) {
    if (cost_of(hash) < highest) cheaper_users_.insert(user);
  }
}

BasicAuth::Key BasicAuth::key_of(const std::string& user, const std::string& password) const {
  std::string message = user;
  message += '\0';
  message += password;
  Key key{};
  unsigned int length = 0;
  HMAC(EVP_sha256(), secret_.data(), static_cast<int>(secret_.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), key.data(), &length);
  return key;
}

bool BasicAuth::check(const std::string& user, const std::string& password) const {
  const Key key = key_of(user, password);
  {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (allowed_.count(key) != 0) return true;
    if (refused_.count(key) != 0) return false;
  }
  std::lock_guard<std::mutex> one_at_a_time(bcrypt_mutex_);
  {
    // Another request may have settled it while this one waited.
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (allowed_.count(key) != 0) return true;
    if (refused_.count(key) != 0) return false;
  }
  const auto found = users_.find(user);
  ++bcrypt_runs_;
  const bool allowed = found == users_.end() ? (bcrypt_matches(password, unknown_user_hash_), false)
                                             : bcrypt_matches(password, found->second);
  if (!allowed && cheaper_users_.count(user) != 0) {
    // Refused at a cost below the highest: finish at the highest, as an unknown user would.
    ++bcrypt_runs_;
    bcrypt_matches(password, unknown_user_hash_);
  }
  std::lock_guard<std::mutex> lock(cache_mutex_);
  if (allowed) {
    allowed_.insert(key);
  } else if (refused_.insert(key).second) {
    refused_order_.push_back(key);
    if (refused_order_.size() > kRefusedKept) {
      refused_.erase(refused_order_.front());
      refused_order_.pop_front();
    }
  }
  return allowed;
}

bool BasicAuth::allows(std::string_view authorization) const {
  if (users_.empty()) return true;
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
  // crypt_r stops at a NUL: "pass\0anything" would pass as "pass".
  if (password.find('\0') != std::string::npos) return false;
  return check(user, password);
}

}  // namespace hwperf
