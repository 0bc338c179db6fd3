// What every request passes before a route runs, each rule written once (exporter-toolkit's
// web/handler.go wraps the application handler the same way): request bodies refused, the rate
// limit, methods, paths that do not exist, basic authentication, and the limit on concurrent
// collections; the exempt path (liveness probes) skips the rate limit and authentication. No
// sockets here: the HTTP server asks, and tests ask directly.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/config.h"
#include "config/web_config.h"
#include "web/http.h"

namespace hwperf {

class BasicAuth;

struct AdmissionPolicy {
  // Whether the application serves `path`; others get 404 before any password is checked, so
  // that they cost no bcrypt. Null: every path.
  std::function<bool(std::string_view path)> serves;
  // Never rate limited nor authenticated (liveness probes call it without credentials, and it
  // says nothing).
  std::string exempt_path = kHealthPath;
  // At most max_concurrent_requests requests for the limited paths at once, together
  // (node_exporter's
  // --web.max-requests); more get 503 at once instead of queuing. 0 means no limit. Counted
  // after authentication, so that clients without credentials never take a place. The paths
  // are those whose requests collect: the metrics, and the topology page's JSON.
  std::vector<std::string> limited_paths = {kDefaultTelemetryPath};
  unsigned max_concurrent_requests = 40;
  // At most rate_limit->burst requests at once, refilled one per interval; beyond, 429 at once
  // (exporter-toolkit's rate_limit).
  std::optional<RateLimit> rate_limit;
  // basic_auth_users: user -> bcrypt hash; empty: no authentication.
  std::map<std::string, std::string> users;
};

class Admission {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;

  // Throws ConfigError naming the user when a hash can never match or costs over a second per
  // check (web/basic_auth.h), std::invalid_argument for a rate limit of no requests.
  explicit Admission(AdmissionPolicy policy, Clock clock = &std::chrono::steady_clock::now);
  ~Admission();
  Admission(const Admission&) = delete;
  Admission& operator=(const Admission&) = delete;

  // A request's admission: refused with a response, or admitted while the ticket lives (it holds
  // the request's place under the concurrency limit).
  class Ticket {
   public:
    Ticket(Ticket&& other) noexcept;
    Ticket& operator=(Ticket&&) = delete;
    Ticket(const Ticket&) = delete;
    ~Ticket();
    bool admitted() const { return !refusal_; }
    // The response for a refused request.
    HttpResponse& refusal() { return *refusal_; }

   private:
    friend class Admission;
    explicit Ticket(std::optional<HttpResponse> refusal, const Admission* holder = nullptr)
        : refusal_(std::move(refusal)), holder_(holder) {}
    std::optional<HttpResponse> refusal_;
    const Admission* holder_;  // non-null: a place to give back
  };

  // Thread-safe.
  Ticket admit(const HttpRequest& request) const;

  bool authenticates() const;
  // bcrypt runs so far (tests, benchmark).
  std::uint64_t bcrypt_runs() const;
  const AdmissionPolicy& policy() const { return policy_; }

 private:
  bool take_token() const;

  AdmissionPolicy policy_;
  Clock clock_;
  std::unique_ptr<const BasicAuth> auth_;
  mutable std::atomic<unsigned> in_flight_{0};
  mutable std::mutex bucket_mutex_;
  mutable double bucket_tokens_ = 0;  // requests the rate limit allows now, up to its burst
  mutable std::chrono::steady_clock::time_point bucket_filled_;
};

}  // namespace hwperf
