// Command-line flags: values, bounds, and the errors that name the flag.
#include "tests/catch.hpp"

#include <string>
#include <vector>

#include "config/errors.h"
#include "exporter/cli.h"
#include "exporter/http_server.h"

using namespace hwperf;

TEST_CASE("the flag web.max-requests takes 0 (no limit) up to one per HTTP worker", "[cli][http]") {
  const unsigned workers = HttpServerOptions{}.worker_threads;
  for (const unsigned n : {0u, 1u, workers}) {
    CAPTURE(n);
    const auto options = parse_cli({"--web.max-requests=" + std::to_string(n)});
    REQUIRE(options.max_requests.has_value());
    CHECK(*options.max_requests == n);
  }
  CHECK_FALSE(parse_cli({}).max_requests.has_value());
  for (const std::string& bad : {std::to_string(workers + 1), std::string("-1"), std::string("x"),
                                std::string("99999999999999999999")}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH(parse_cli({"--web.max-requests=" + bad}),
                      Catch::Contains("--web.max-requests=" + bad) &&
                          Catch::Contains(std::to_string(workers)));
  }
  CHECK_THAT(usage_text(), Catch::Contains("--web.max-requests"));
}
