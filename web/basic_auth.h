// Basic authentication against --web.config.file's basic_auth_users (config/web_config.h), at a
// cost a client cannot turn against the host the exporter measures: a verdict, right or wrong,
// is cached under a keyed hash of user and password (never the password), at most one bcrypt
// runs at a time, and an unknown user is checked against a hash of the highest cost configured,
// so that its answer takes as long as a known user's (exporter-toolkit web/handler.go, cache.go).
// A wrong password for a user whose hash is cheaper than the highest is checked at the highest
// cost too, so that no failed login tells a configured name from an unknown one by its time
// (exporter-toolkit answers an unknown user at a fixed cost 10 whatever the users' costs).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

#include "config/web_config.h"

namespace hwperf {

class BasicAuth {
 public:
  // Throws ConfigError naming the user when a hash can never match, or when its cost would take
  // more than about a second per check on this machine (measured at a cheap cost, extrapolated).
  explicit BasicAuth(const std::map<std::string, std::string>& users);
  BasicAuth(const BasicAuth&) = delete;
  BasicAuth& operator=(const BasicAuth&) = delete;

  bool required() const { return !users_.empty(); }
  // Whether an Authorization header value ("Basic base64(user:password)") names a configured
  // user with the right password. True when no users are configured. Thread-safe.
  bool allows(std::string_view authorization) const;
  // bcrypt runs since construction (for tests and the benchmark): one per new verdict, two for a
  // refused password of a user in cheaper_users_.
  std::uint64_t bcrypt_runs() const { return bcrypt_runs_.load(); }

 private:
  using Key = std::array<unsigned char, 32>;
  Key key_of(const std::string& user, const std::string& password) const;
  bool check(const std::string& user, const std::string& password) const;

  std::map<std::string, std::string> users_;
  std::string unknown_user_hash_;         // made at startup at the highest configured cost
  std::set<std::string> cheaper_users_;   // users whose hash costs less than the highest
  std::array<unsigned char, 32> secret_;  // the cache key's HMAC key, random per process
  mutable std::mutex cache_mutex_;
  mutable std::set<Key> allowed_;  // at most one per user: only a right password gets in
  mutable std::set<Key> refused_;  // bounded: the oldest go first
  mutable std::deque<Key> refused_order_;
  mutable std::mutex bcrypt_mutex_;  // one bcrypt at a time: one core at the most
  mutable std::atomic<std::uint64_t> bcrypt_runs_{0};
};

// Whether `password` matches the bcrypt `hash` ($2a$, $2b$ or $2y$).
bool bcrypt_matches(const std::string& password, const std::string& hash);
// bcrypt runs this process has spent measuring what a check costs here (a few, once: a web
// config with thousands of users must not pay them per user).
std::uint64_t bcrypt_calibration_runs();

}  // namespace hwperf
