// The admission layer without sockets: each rule in front of the routes, in its order, with a
// fake clock for the rate limit and tickets for the concurrency limit.
#include "tests/catch.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "collectors/build_info.h"
#include "exporter/router.h"
#include "tests/support/support.h"
#include "web/admission.h"

using namespace hwperf;

namespace {

// The paths the exporter's routes serve with the default telemetry path.
bool exporter_serves(std::string_view path) {
  return path == "/metrics" || path == "/" || path == "/-/healthy";
}

AdmissionPolicy with_user(const std::string& user, const std::string& password) {
  AdmissionPolicy policy;
  policy.serves = exporter_serves;
  policy.users[user] = test::bcrypt_hash(password, 4);
  return policy;
}

int status_of(const Admission& admission, const HttpRequest& request) {
  auto ticket = admission.admit(request);
  return ticket.admitted() ? 200 : ticket.refusal().status;
}

}  // namespace

TEST_CASE(
    "with basic_auth_users every path but /-/healthy needs the right credentials, and paths "
    "that do not exist answer 404 without a bcrypt run",
    "[web][web_config]") {
  const Admission admission(with_user("prometheus", "s3cret"));
  const std::string right = test::basic_auth("prometheus", "s3cret");
  const std::string wrong = test::basic_auth("prometheus", "s3cret!");
  for (const char* path : {"/metrics", "/"}) {
    CAPTURE(path);
    auto missing = admission.admit(test::get_request(path));
    REQUIRE_FALSE(missing.admitted());
    CHECK(missing.refusal().status == 401);
    bool challenge = false;
    for (const auto& [name, value] : missing.refusal().headers) {
      challenge = challenge || (name == "WWW-Authenticate" && value.rfind("Basic ", 0) == 0);
    }
    CHECK(challenge);
    CHECK(status_of(admission, test::get_request(path, wrong)) == 401);
    CHECK(status_of(admission, test::get_request(path, right)) == 200);
  }
  // No route, no password check: a flood of requests for made-up paths costs no bcrypt.
  const auto runs = admission.bcrypt_runs();
  CHECK(status_of(admission, test::get_request("/nowhere", right)) == 404);
  CHECK(status_of(admission, test::get_request("/nowhere", wrong)) == 404);
  CHECK(status_of(admission, test::get_request("/nowhere")) == 404);
  CHECK(admission.bcrypt_runs() == runs);
  // Liveness probes carry no credentials; the answer says nothing about the machine.
  CHECK(status_of(admission, test::get_request("/-/healthy")) == 200);
  // Without users nothing is asked.
  AdmissionPolicy open;
  open.serves = exporter_serves;
  CHECK(status_of(Admission(open), test::get_request("/metrics")) == 200);
}

TEST_CASE("twenty authenticated scrapes run bcrypt once", "[web][web_config]") {
  const Admission admission(with_user("prometheus", "s3cret"));
  const std::string right = test::basic_auth("prometheus", "s3cret");
  for (int scrape = 0; scrape < 20; ++scrape) {
    CHECK(status_of(admission, test::get_request("/metrics", right)) == 200);
  }
  CHECK(admission.bcrypt_runs() == 1);
}

TEST_CASE("the exporter's routes decide which paths exist", "[web]") {
  const Exporter exporter("/custom", CollectorSet{}, build_info_family({}));
  AdmissionPolicy policy;
  policy.serves = [&](std::string_view path) { return exporter.serves(path); };
  const Admission admission(policy);
  CHECK(status_of(admission, test::get_request("/custom")) == 200);
  CHECK(status_of(admission, test::get_request("/metrics")) == 404);
  // Every path the admission lets through has a route.
  for (const char* path : {"/custom", "/", "/-/healthy"}) {
    CAPTURE(path);
    CHECK(exporter.route(test::get_request(path)).status == 200);
  }
}

TEST_CASE("methods other than GET and HEAD get 405, request bodies 413", "[web]") {
  const Admission admission(AdmissionPolicy{});
  HttpRequest post = test::get_request("/metrics");
  post.method = "POST";
  auto refused = admission.admit(post);
  REQUIRE_FALSE(refused.admitted());
  CHECK(refused.refusal().status == 405);
  CHECK(refused.refusal().headers ==
        std::vector<std::pair<std::string, std::string>>{{"Allow", "GET, HEAD"}});
  HttpRequest head = test::get_request("/metrics");
  head.method = "HEAD";
  CHECK(status_of(admission, head) == 200);
  HttpRequest with_body = test::get_request("/-/healthy");
  with_body.has_body = true;
  CHECK(status_of(admission, with_body) == 413);
}

TEST_CASE("the rate limit answers 429 beyond its burst, refills, and never limits /-/healthy",
          "[web]") {
  auto now = std::chrono::steady_clock::time_point{} + std::chrono::hours(1);
  AdmissionPolicy policy;
  policy.rate_limit = RateLimit{1.5, 2};  // "1.5s", burst 2
  const Admission admission(policy, [&] { return now; });
  CHECK(status_of(admission, test::get_request("/metrics")) == 200);
  CHECK(status_of(admission, test::get_request("/")) == 200);
  CHECK(status_of(admission, test::get_request("/metrics")) == 429);
  CHECK(status_of(admission, test::get_request("/-/healthy")) == 200);
  now += std::chrono::milliseconds(1400);
  CHECK(status_of(admission, test::get_request("/metrics")) == 429);
  now += std::chrono::milliseconds(200);  // 1.6 s since the bucket emptied: one more
  CHECK(status_of(admission, test::get_request("/metrics")) == 200);
  CHECK(status_of(admission, test::get_request("/metrics")) == 429);
  now += std::chrono::hours(1);  // refilled up to the burst, not beyond
  CHECK(status_of(admission, test::get_request("/metrics")) == 200);
  CHECK(status_of(admission, test::get_request("/metrics")) == 200);
  CHECK(status_of(admission, test::get_request("/metrics")) == 429);
}

TEST_CASE(
    "the concurrency limit counts admitted scrapes of the telemetry path only, after "
    "authentication",
    "[web]") {
  AdmissionPolicy policy = with_user("prometheus", "s3cret");
  policy.max_concurrent_requests = 2;
  const Admission admission(policy);
  const std::string right = test::basic_auth("prometheus", "s3cret");
  const std::string wrong = test::basic_auth("prometheus", "nope");
  std::optional<Admission::Ticket> first(admission.admit(test::get_request("/metrics", right)));
  std::optional<Admission::Ticket> second(admission.admit(test::get_request("/metrics", right)));
  REQUIRE(first->admitted());
  REQUIRE(second->admitted());
  auto third = admission.admit(test::get_request("/metrics", right));
  REQUIRE_FALSE(third.admitted());
  CHECK(third.refusal().status == 503);
  CHECK_THAT(third.refusal().body, Catch::Contains("2 requests for /metrics are in progress"));
  // A client without the password is refused for that, and takes no place.
  CHECK(status_of(admission, test::get_request("/metrics", wrong)) == 401);
  CHECK(status_of(admission, test::get_request("/", right)) == 200);
  CHECK(status_of(admission, test::get_request("/-/healthy")) == 200);
  first.reset();  // a finished scrape gives its place back
  CHECK(status_of(admission, test::get_request("/metrics", right)) == 200);
}

TEST_CASE("the topology page's JSON, which collects too, shares the scrapes' limit", "[web]") {
  AdmissionPolicy policy;
  policy.limited_paths = {"/metrics", "/topology.json"};
  policy.max_concurrent_requests = 2;
  const Admission admission(policy);
  std::optional<Admission::Ticket> scrape(admission.admit(test::get_request("/metrics")));
  std::optional<Admission::Ticket> page(admission.admit(test::get_request("/topology.json")));
  REQUIRE(scrape->admitted());
  REQUIRE(page->admitted());
  auto refused = admission.admit(test::get_request("/topology.json"));
  REQUIRE_FALSE(refused.admitted());
  CHECK(refused.refusal().status == 503);
  CHECK_THAT(refused.refusal().body,
             Catch::Contains("2 requests for /metrics, /topology.json are in progress"));
  CHECK(status_of(admission, test::get_request("/metrics")) == 503);
  // The page itself and its files collect nothing and are not limited.
  CHECK(status_of(admission, test::get_request("/topology")) == 200);
  page.reset();
  CHECK(status_of(admission, test::get_request("/metrics")) == 200);
}

TEST_CASE("a rate limit of no requests is refused", "[web]") {
  AdmissionPolicy policy;
  policy.rate_limit = RateLimit{0, 3};
  CHECK_THROWS_AS(Admission(policy), std::invalid_argument);
}

TEST_CASE("the tests' basic authentication header is RFC 7617's", "[web][web_config]") {
  // RFC 7617 section 2's example.
  CHECK(test::basic_auth("Aladdin", "open sesame") == "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
}
