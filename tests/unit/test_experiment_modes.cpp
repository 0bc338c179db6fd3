// Experiment mode's pieces without a command: the flags, ?target= through the router, and the
// mark a lingering exporter waits on. (The summary's formats: test_experiment_summary.cpp.)
#include "tests/catch.hpp"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "collectors/build_info.h"
#include "collectors/metrics.h"
#include "config/errors.h"
#include "collectors/events/vocabulary.h"
#include "collectors/process/process_config.h"
#include "exporter/cli.h"
#include "exporter/experiment/experiment_run.h"
#include "exporter/router.h"
#include "tests/support/support.h"
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
class Targets final : public Collector, public NamedTargets {
 public:
  std::string name() const override { return "targets"; }
  void refresh() override {}
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

TEST_CASE("Experiment flags: the summary's own file and the target's name", "[experiment][cli]") {
  const auto set = parse_cli({"--once", "--summary.output=run.json", "--experiment.name=matmul",
                              "--", "taskset", "-c", "1", "./matmul"});
  CHECK(*set.summary_output == "run.json");
  CHECK(*set.experiment_name == "matmul");
  CHECK_FALSE(parse_cli({"--once", "--", "true"}).summary_output);
  CHECK(problems_of({"--summary.output=x", "--", "true"}) ==
        std::vector<std::string>{"--summary.output needs --once -- CMD"});
  CHECK(problems_of({"--experiment.name=x"}) ==
        std::vector<std::string>{"--experiment.name needs -- CMD"});
  CHECK_THAT(problems_of({"--experiment.name=", "--", "true"}).at(0),
             Catch::Contains("expected a name of printable characters"));
  CHECK_THAT(problems_of({"--experiment.name=a\tb", "--", "true"}).at(0),
             Catch::Contains("expected a name of printable characters"));
}

namespace {

// The programs of a made-up PATH (x86_64 is setarch under another name, as util-linux installs
// it), so that the naming rule is tested apart from this machine's.
bool fake_program(const std::string& word) {
  for (const char* program :
       {"taskset", "env", "sleep", "sh", "bash", "./prog", "numactl", "python3", "mpirun", "srun",
        "setarch", "x86_64", "nice", "[", "/usr/bin/taskset", "stdbuf", "chrt", "time"}) {
    if (word == program) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("The command's target is named after the program behind its wrappers", "[experiment]") {
  struct Case {
    std::vector<std::string> command;
    const char* name;
  };
  const Case cases[] = {
      {{"sleep", "3"}, "sleep"},
      {{"./prog"}, "prog"},
      {{"/usr/bin/taskset", "-c", "1", "./prog"}, "prog"},
      {{"taskset", "0x3", "./prog"}, "prog"},
      {{"env", "X=1", "Y=2", "./prog", "arg"}, "prog"},
      {{"taskset", "-c", "1", "env", "X=1", "sh", "-c", "./prog --size 3"}, "prog"},
      {{"numactl", "--membind=0", "-C", "0-3", "python3", "train.py"}, "python3"},
      {{"mpirun", "-np", "4", "./prog"}, "prog"},
      {{"srun", "-n", "2", "--cpu-bind=cores", "./prog"}, "prog"},
      {{"setarch", "x86_64", "-R", "./prog"}, "prog"},
      {{"nice", "-n", "10", "stdbuf", "-oL", "./prog"}, "prog"},
      {{"chrt", "-f", "10", "time", "-p", "./prog"}, "prog"},
      // A shell's -c: the program of one simple command, else the shell.
      {{"sh", "-c", "exec ./prog"}, "prog"},
      {{"sh", "-c", "OMP_NUM_THREADS=4 ./prog > out.txt"}, "prog"},
      {{"bash", "-o", "pipefail", "-ec", "taskset -c 1 ./prog"}, "prog"},
      {{"sh", "-c", "./prog; echo done"}, "sh"},
      {{"sh", "-c", "./prog | sort"}, "sh"},
      {{"sh", "-c", "while true; do sleep 1; done"}, "sh"},
      {{"sh", "-c", "cd /tmp"}, "sh"},
      {{"sh", "-c", "'./prog'"}, "sh"},
      {{"sh", "-c", "$PROG"}, "sh"},
      {{"sh", "script.sh"}, "sh"},
      // A wrapper that runs nothing its words name keeps its own name.
      {{"env"}, "env"},
      {{"env", "-i", "NAME=x", "unknown-program"}, "env"},
  };
  for (const auto& [command, name] : cases) {
    CAPTURE(command);
    CHECK(command_target_name(command, &fake_program) == name);
  }
}

TEST_CASE("A program is what execvp would run: an executable file in PATH or at a path",
          "[experiment]") {
  CHECK(is_program("sh"));
  CHECK(is_program("/bin/sh"));
  CHECK_FALSE(is_program("/etc/passwd"));  // not executable
  CHECK_FALSE(is_program("/tmp"));         // a directory
  CHECK_FALSE(is_program("no-such-program-hwperf"));
  CHECK_FALSE(is_program("1"));  // taskset -c 1: a CPU list, not a program
  CHECK_FALSE(is_program(""));
}

TEST_CASE("Events that count in kernel mode only are not measured where user mode is counted",
          "[experiment]") {
  // Named as the events layer names them when the configuration gives no metric.
  for (const char* event :
       {"perf::CONTEXT-SWITCHES", "perf::CS", "perf::CPU-MIGRATIONS", "perf::MIGRATIONS"}) {
    CAPTURE(event);
    CHECK(kernel_mode_only_metric(event) == events::default_metric_base(event));
  }
  CHECK_FALSE(kernel_mode_only_metric("perf::PAGE-FAULTS"));
  CHECK_FALSE(kernel_mode_only_metric("PAPI_TOT_INS"));

  Config config;
  config.get<ProcessCollectorConfig>().events_given = true;
  config.get<ProcessCollectorConfig>().events = {{"perf::CONTEXT-SWITCHES:u", "", "", {}},
                                                 {"perf::CPU-MIGRATIONS", "moves", "", {}},
                                                 {"perf::CS:k=1", "", "", {}},
                                                 {"perf::PAGE-FAULTS", "", "", {}}};
  const auto plan = summary_plan(config);
  // Its own :u leaves kernel mode out whatever the domain.
  CHECK(not_measured(plan, {}) ==
        std::map<std::string, std::string>{
            {"context_switches", "counts in kernel mode only: not measured in user mode"}});
  // Narrowed to user mode by the kernel: the one that follows the domain too; :k=1 is its own.
  auto narrowed = make_family(metric_name({"process", "domain", "narrowed"}), "test",
                              prometheus::MetricType::Gauge);
  add_gauge(narrowed, {{"domain", "user"}, {"reason", "paranoid"}}, 1.0);
  const auto user = not_measured(plan, {narrowed});
  CHECK(user.size() == 2);
  CHECK(user.count("moves") == 1);
  config.get<ProcessCollectorConfig>().domain = CountingDomain::user;
  CHECK(not_measured(summary_plan(config), {}).size() == 2);
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
