// Experiment mode's pieces without a command: the flags, ?target= through the router, and the
// mark a lingering exporter waits on. (The summary's formats: test_experiment_summary.cpp.)
#include "tests/catch.hpp"

#include <memory>
#include <string>
#include <vector>

#include "collectors/build_info.h"
#include "collectors/metrics.h"
#include "config/errors.h"
#include "exporter/cli.h"
#include "exporter/router.h"
#include "tests/support.h"
#include "web/query.h"

using namespace hwperf;

namespace {

std::vector<std::string> problems_of(const std::vector<std::string>& args) {
  try {
    parse_cli(args);
  } catch (const ConfigError& e) {
    return e.problems();
  }
  return {};
}

// A collector with two targets that says which it was asked for.
class Targets final : public Collector {
 public:
  std::string name() const override { return "targets"; }
  std::vector<std::string> target_names() const override { return {"db", "web"}; }
  void collect(std::vector<prometheus::MetricFamily>& out) override {
    collect_targets(out, target_names());
  }
  void collect_targets(std::vector<prometheus::MetricFamily>& out,
                       const std::vector<std::string>& names) override {
    auto family =
        make_family(counter_name({"target", "work"}), "Work.", prometheus::MetricType::Counter);
    for (const auto& name : names) add_counter(family, {{"target", name}}, 1.0);
    out.push_back(std::move(family));
  }
};

// A collector without targets, left out of a ?target= scrape.
class Machine final : public Collector {
 public:
  std::string name() const override { return "machine"; }
  void collect(std::vector<prometheus::MetricFamily>& out) override {
    auto family =
        make_family(counter_name({"machine", "work"}), "Work.", prometheus::MetricType::Counter);
    add_counter(family, {}, 1.0);
    out.push_back(std::move(family));
  }
};

std::unique_ptr<Exporter> exporter_with_targets() {
  CollectorSet collectors;
  collectors.add(std::make_unique<Targets>());
  collectors.add(std::make_unique<Machine>());
  return std::make_unique<Exporter>("/metrics", std::move(collectors), build_info_family({}));
}

HttpResponse get(const Exporter& exporter, const std::string& query) {
  HttpRequest request;
  request.method = "GET";
  request.path = "/metrics";
  request.query = query;
  return exporter.route(request);
}

}  // namespace

TEST_CASE("Experiment flags: defaults, values, and where each one means something",
          "[experiment][cli]") {
  const auto defaults = parse_cli({"--once", "--", "true"});
  CHECK_FALSE(defaults.output);
  CHECK(defaults.summary_format == SummaryFormat::text);
  CHECK(defaults.repeat == 1);
  CHECK(defaults.linger_ms == 30000);
  const auto set = parse_cli({"--once", "--output=-", "--summary.format=json", "--repeat", "5",
                              "--", "sh", "-c", "--repeat=9"});
  CHECK(*set.output == "-");
  CHECK(set.summary_format == SummaryFormat::json);
  CHECK(set.repeat == 5);  // the command's own words are the command's
  CHECK(parse_cli({"--linger=2m", "--", "true"}).linger_ms == 120000);
  CHECK(parse_cli({"--linger=0s", "--", "true"}).linger_ms == 0);
  using Catch::Contains;
  CHECK_THAT(problems_of({"--once", "--summary.format=xml", "--", "true"}).at(0),
             Contains("expected text, csv or json"));
  CHECK_THAT(problems_of({"--once", "--repeat=0", "--", "true"}).at(0), Contains("from 1 to 100"));
  CHECK(problems_of({"--repeat=3", "--", "true"}) ==
        std::vector<std::string>{"--repeat needs --once -- CMD"});
  CHECK(problems_of({"--once", "--summary.format=csv"}) ==
        std::vector<std::string>{"--summary.format needs --once -- CMD"});
  CHECK(problems_of({"--output=x"}) == std::vector<std::string>{"--output needs --once"});
  CHECK(problems_of({"--once", "--linger=5s", "--", "true"}) ==
        std::vector<std::string>{"--linger needs -- CMD without --once"});
  CHECK_THAT(problems_of({"--linger=soon", "--", "true"}).at(0), Contains("expected a duration"));
}

TEST_CASE("Query values are split on & and percent-decoded", "[experiment][http]") {
  CHECK(query_values("target=a&x=1&target=b%20c+d", "target") ==
        std::vector<std::string>{"a", "b c d"});
  CHECK(query_values("", "target").empty());
  CHECK(query_values("target", "target") == std::vector<std::string>{""});
  CHECK(query_values("target=%zz%4", "target") == std::vector<std::string>{"%zz%4"});
}

TEST_CASE("?target= serves only the named targets, and an unknown name is a 400 listing them",
          "[experiment][router]") {
  const auto exporter = exporter_with_targets();
  const auto all = get(*exporter, "");
  CHECK_THAT(all.body, Catch::Contains("hwperf_machine_work_total 1") &&
                           Catch::Contains("hwperf_target_work_total{target=\"web\"} 1"));
  const auto web = get(*exporter, "target=web");
  REQUIRE(web.status == 200);
  CHECK_THAT(web.body, Catch::Contains("hwperf_target_work_total{target=\"web\"} 1") &&
                           Catch::Contains("hwperf_build_info") &&
                           !Catch::Contains("target=\"db\"") &&
                           !Catch::Contains("hwperf_machine_work_total"));
  const auto both = get(*exporter, "target=web&target=db");
  CHECK_THAT(both.body, Catch::Contains("target=\"db\"") && Catch::Contains("target=\"web\""));
  const auto unknown = get(*exporter, "target=web&target=cache");
  CHECK(unknown.status == 400);
  CHECK(unknown.body == "unknown target \"cache\"; the configured targets are: db, web\n");
  // A client's name comes back cut and with its control bytes escaped, never whole.
  const auto long_name = get(*exporter, "target=" + std::string(16 * 1024, 'x') + "%0a%1b");
  CHECK(long_name.status == 400);
  CHECK(long_name.body.size() < 400);
  CHECK_THAT(long_name.body, Catch::Contains("... (16386 bytes)"));
  const auto control = get(*exporter, "target=a%0d%0a%22b");
  CHECK_THAT(control.body, Catch::StartsWith("unknown target \"a\\x0d\\x0a\\x22b\"; "));
}

TEST_CASE("A scrape mark is passed only by a scrape that began after it and was answered",
          "[experiment][router]") {
  const auto exporter = exporter_with_targets();
  get(*exporter, "");
  const auto mark = exporter->scrape_mark();
  CHECK_FALSE(exporter->scraped_after(mark));
  get(*exporter, "target=nothing");  // refused: it read nothing
  CHECK_FALSE(exporter->scraped_after(mark));
  get(*exporter, "target=db");
  CHECK(exporter->scraped_after(mark));
}
