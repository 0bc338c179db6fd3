#include "web/admission.h"

#include <algorithm>
#include <stdexcept>

#include "web/basic_auth.h"

namespace hwperf {
namespace {

HttpResponse plain(int status, std::string body) {
  return HttpResponse{status, kTextPlain, {}, std::move(body)};
}

}  // namespace

Admission::Admission(AdmissionPolicy policy, Clock clock)
    : policy_(std::move(policy)),
      clock_(std::move(clock)),
      auth_(std::make_unique<BasicAuth>(policy_.users)) {
  if (policy_.rate_limit) {
    if (policy_.rate_limit->burst == 0 || !(policy_.rate_limit->interval_seconds > 0)) {
      throw std::invalid_argument("rate_limit needs a positive interval and burst");
    }
    bucket_tokens_ = policy_.rate_limit->burst;
    bucket_filled_ = clock_();
  }
}

Admission::~Admission() = default;

Admission::Ticket::Ticket(Ticket&& other) noexcept
    : refusal_(std::move(other.refusal_)), holder_(std::exchange(other.holder_, nullptr)) {}

Admission::Ticket::~Ticket() {
  if (holder_ != nullptr) holder_->in_flight_.fetch_sub(1);
}

bool Admission::authenticates() const { return auth_->required(); }
std::uint64_t Admission::bcrypt_runs() const { return auth_->bcrypt_runs(); }

bool Admission::take_token() const {
  const std::lock_guard<std::mutex> lock(bucket_mutex_);
  const auto now = clock_();
  const double elapsed = std::chrono::duration<double>(now - bucket_filled_).count();
  bucket_filled_ = now;
  bucket_tokens_ = std::min(static_cast<double>(policy_.rate_limit->burst),
                            bucket_tokens_ + elapsed / policy_.rate_limit->interval_seconds);
  if (bucket_tokens_ < 1) return false;
  bucket_tokens_ -= 1;
  return true;
}

Admission::Ticket Admission::admit(const HttpRequest& request) const {
  // Nothing behind this reads a request body, and CivetWeb would read (and discard) an unread
  // one with a fresh timeout for every piece a client trickles: a worker held for ever. So a
  // body is refused unread (and the server closes the connection).
  if (request.has_body) return Ticket(plain(413, "request bodies are not accepted\n"));
  const bool exempt = request.path == policy_.exempt_path;
  if (policy_.rate_limit && !exempt && !take_token()) {
    return Ticket(plain(429, "more requests than rate_limit allows; try again later\n"));
  }
  if (request.method != "GET" && request.method != "HEAD") {
    HttpResponse refused = plain(405, "method not allowed\n");
    refused.headers.emplace_back("Allow", "GET, HEAD");
    return Ticket(std::move(refused));
  }
  if (exempt) return Ticket(std::nullopt);
  if (policy_.serves && !policy_.serves(request.path)) {
    return Ticket(plain(404, "404 page not found\n"));
  }
  if (!auth_->allows(request.authorization)) {
    HttpResponse refused = plain(401, "401 Unauthorized\n");
    refused.headers.emplace_back("WWW-Authenticate",
                                 "Basic realm=\"hwperf_exporter\", charset=\"UTF-8\"");
    return Ticket(std::move(refused));
  }
  if (policy_.max_concurrent_requests == 0 ||
      std::find(policy_.limited_paths.begin(), policy_.limited_paths.end(), request.path) ==
          policy_.limited_paths.end()) {
    return Ticket(std::nullopt);
  }
  if (in_flight_.fetch_add(1) >= policy_.max_concurrent_requests) {
    in_flight_.fetch_sub(1);
    std::string paths;
    for (const auto& path : policy_.limited_paths) paths += (paths.empty() ? "" : ", ") + path;
    return Ticket(plain(503, std::to_string(policy_.max_concurrent_requests) + " requests for " +
                                 paths +
                                 " are in progress, the most allowed at once; try again later\n"));
  }
  return Ticket(std::nullopt, this);
}

}  // namespace hwperf
