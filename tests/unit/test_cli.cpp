// Command-line flags: values, bounds, and the errors that name the flag.
#include "tests/catch.hpp"

#include <string>
#include <vector>

#include "config/errors.h"
#include "exporter/cli.h"
#include "web/http_server.h"

using namespace hwperf;

TEST_CASE("the flag web.max-requests takes 0 (no limit) up to one per connection served",
          "[cli][http]") {
  const unsigned workers = HttpServerOptions{}.worker_threads;
  for (const unsigned n : {0u, 1u, workers}) {
    CAPTURE(n);
    const auto options = parse_cli({"--web.max-requests=" + std::to_string(n)});
    REQUIRE(options.max_requests.has_value());
    CHECK(*options.max_requests == n);
  }
  CHECK_FALSE(parse_cli({}).max_requests.has_value());
  // More than the default workers, or than --web.max-connections, can never be collecting.
  CHECK_THROWS_WITH(parse_cli({"--web.max-requests=" + std::to_string(workers + 1)}),
                    Catch::Contains(std::to_string(workers) + " (--web.max-connections)"));
  CHECK_THROWS_WITH(
      parse_cli({"--web.max-connections=10", "--web.max-requests=11"}),
      Catch::Contains("--web.max-requests=11") && Catch::Contains("10 (--web.max-connections)"));
  CHECK(*parse_cli({"--web.max-connections=300", "--web.max-requests=200"}).max_requests == 200);
  for (const std::string& bad :
       {std::string("-1"), std::string("x"), std::string("99999999999999999999")}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH(
        parse_cli({"--web.max-requests=" + bad}),
        Catch::Contains("--web.max-requests=" + bad) && Catch::Contains("expected a whole number"));
  }
  CHECK_THAT(usage_text(), Catch::Contains("--web.max-requests"));
}

TEST_CASE("the HTTP limit flags take bounded counts and durations", "[cli][http]") {
  const auto options = parse_cli({"--web.max-connections=512", "--web.request-timeout=2s500ms",
                                  "--web.keep-alive-timeout=250ms"});
  CHECK(options.max_connections == 512u);
  CHECK(options.request_timeout_ms == 2500u);
  CHECK(options.keep_alive_timeout_ms == 250u);
  CHECK(parse_cli({"--web.max-connections=" + std::to_string(kMaxConnectionsCeiling)})
            .max_connections == kMaxConnectionsCeiling);

  struct Bad {
    std::string flag;
    std::string says;
  };
  const auto bad = GENERATE(
      Bad{"--web.max-connections=0", "from 1 to"},
      Bad{"--web.max-connections=" + std::to_string(kMaxConnectionsCeiling + 1), "from 1 to"},
      Bad{"--web.request-timeout=5", "expected a duration"},
      Bad{"--web.request-timeout=" + std::to_string(kMinTimeoutMs - 1) + "ms",
          "expected a duration"},
      Bad{"--web.request-timeout=" + std::to_string(kMaxTimeoutMs / 1000 + 1) + "s",
          "expected a duration"},
      Bad{"--web.keep-alive-timeout=1.5s", "expected a duration"},
      Bad{"--web.keep-alive-timeout=", "expected a duration"});
  CAPTURE(bad.flag);
  CHECK_THROWS_WITH(parse_cli({bad.flag}),
                    Catch::Contains(bad.flag + ": ") && Catch::Contains(bad.says));
  for (const char* flag :
       {"--web.max-connections", "--web.request-timeout", "--web.keep-alive-timeout"}) {
    CHECK_THAT(usage_text(), Catch::Contains(flag));
  }
}
