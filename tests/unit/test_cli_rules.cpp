// --print-rules on the command line: a switch of its own, which no other mode takes beside it.
#include "tests/catch.hpp"
#include <string>
#include <vector>

#include "config/errors.h"
#include "exporter/cli.h"

using namespace hwperf;

TEST_CASE("The flag --print-rules is a mode of its own", "[cli][groups]") {
  CHECK(parse_cli({"--print-rules"}).print_rules);
  CHECK(parse_cli({"--config.file=hwperf.yml", "--print-rules"}).print_rules);
  const auto other = GENERATE(std::string("--once"), std::string("--check-config"));
  CAPTURE(other);
  try {
    parse_cli({"--print-rules", other});
    FAIL("accepted --print-rules with " << other);
  } catch (const ConfigError& e) {
    REQUIRE(e.problems().size() == 1);
    CHECK(e.problems()[0] == "--print-rules cannot be combined with --check-config or --once");
  }
}
