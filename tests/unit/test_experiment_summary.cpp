// The summary of --once -- CMD over families built here (the process collector's group series as
// the export contract names them): counts per group, and each group's formulas evaluated over the
// run, as perf stat prints its shadow metrics.
#include "tests/catch.hpp"

#include <signal.h>

#include <string>
#include <vector>

#include "collectors/events/groups.h"
#include "collectors/events/rules.h"
#include "collectors/metrics.h"
#include "exporter/experiment/experiment.h"
#include "tests/support/support.h"

using namespace hwperf;

namespace {

prometheus::MetricFamily counter_family(const std::string& metric,
                                        const std::vector<std::pair<Labels, double>>& samples) {
  auto family =
      make_family(counter_name({"process", metric}), "test", prometheus::MetricType::Counter);
  for (const auto& [labels, value] : samples) add_counter(family, labels, value);
  return family;
}

events::RuleScope process_scope(const std::vector<std::string>& names) {
  std::vector<GroupRef> refs;
  for (const auto& name : names) refs.push_back({name, {}});
  events::RuleScope scope;
  scope.family_level = "process";
  scope.levels = {{"instance_target", {"target"}}};
  scope.groups = events::group_definitions(refs, true, {}, {}, "collectors.process.groups");
  return scope;
}

// The line of the summary that ends a formula of `group`, e.g. "(software: clock)".
std::string line_with(const std::string& text, const std::string& part) {
  const auto at = text.find(part);
  if (at == std::string::npos) return "";
  const auto begin = text.rfind('\n', at) + 1;
  return text.substr(begin, text.find('\n', at) - begin);
}

double leading_number(const std::string& line) { return std::stod(line); }

// Two runs of `sh`, as --repeat=2 names them: page faults 100 and 300, task clock 1 s and 3 s
// over 2 s each, so the "CPUs utilized" of the software group is 0.5 and 1.5.
ExperimentSummary two_runs() {
  std::vector<prometheus::MetricFamily> families;
  std::vector<std::pair<Labels, double>> faults, clock, switches, migrations;
  for (const auto& [target, factor] : {std::pair<std::string, double>{"sh.1", 1}, {"sh.2", 3}}) {
    const Labels labels = {{"target", target}, {"group", "software"}};
    faults.push_back({labels, 100 * factor});
    clock.push_back({labels, factor});
    switches.push_back({labels, 10 * factor});
    migrations.push_back({labels, factor});
  }
  families = {counter_family("page_faults", faults), counter_family("task_clock_seconds", clock),
              counter_family("context_switches", switches),
              counter_family("migrations", migrations)};
  ExperimentSummary summary;
  summary.command_line = "sh -c \"spin, then stop\"";
  add_run(summary, families, {process_scope({"software"})}, "sh.1", {0, 2.0});
  add_run(summary, families, {process_scope({"software"})}, "sh.2", {3, 2.0});
  return summary;
}

}  // namespace

TEST_CASE("The summary evaluates each group's formulas over the run, per second of it",
          "[experiment][groups]") {
  const Labels sh_software = {{"target", "sh"}, {"group", "software"}};
  const Labels sh_cpu1 = {{"target", "sh"}, {"group", "software"}, {"cpu", "1"}};
  const Labels other = {{"target", "other"}, {"group", "software"}};
  // Over 2 s: 3 s of CPU time (in two series: per CPU), 60 context switches, 6 migrations, 900
  // page faults counted by the group, and 5000 page faults counted ungrouped, which no formula of
  // the group may read. Another target's series count for nothing.
  const std::vector<prometheus::MetricFamily> families = {
      counter_family("task_clock_seconds", {{sh_software, 1.25}, {sh_cpu1, 1.75}, {other, 50.0}}),
      counter_family("context_switches", {{sh_software, 60.0}}),
      counter_family("migrations", {{sh_software, 6.0}}),
      counter_family("page_faults",
                     {{sh_software, 900.0}, {{{"target", "sh"}}, 5000.0}, {other, 7.0}}),
      counter_family("group_enabled_seconds", {{sh_software, 2.0}}),
      counter_family("group_running_seconds", {{sh_software, 1.0}}),
  };
  const auto text = experiment_summary(families, {process_scope({"software", "ipc"})}, "sh",
                                       "sh -c spin", 0, 2.0);
  INFO(text);
  // 3 s of CPU time in 2 s: 1.5 CPUs; per CPU second: 60 / 3 = 20, 6 / 3 = 2, 900 / 3 = 300.
  CHECK(leading_number(line_with(text, "(software: clock)")) == Approx(1.5));
  CHECK(leading_number(line_with(text, "(software: cs / clock)")) == Approx(20));
  CHECK(leading_number(line_with(text, "(software: migrations / clock)")) == Approx(2));
  CHECK(leading_number(line_with(text, "(software: faults / clock)")) == Approx(300));
  CHECK_THAT(line_with(text, "(software: clock)"), Catch::Contains("CPUs utilized"));
  // The group was on the counters half the time it was enabled.
  CHECK_THAT(line_with(text, "(software: clock)"), Catch::Contains("50.0% of the time"));
  // ipc has no series here: its formula says so instead of a number.
  CHECK_THAT(line_with(text, "(ipc: ins / cyc)"), Catch::Contains("not counted"));
  // Counts: each (event, group) once, the ungrouped page faults apart from the group's.
  CHECK_THAT(text, Catch::Contains("                 900  page_faults  [software]\n") &&
                       Catch::Contains("               5,000  page_faults\n") &&
                       Catch::Contains("            3.000000  task_clock_seconds  [software]\n"));
  CHECK_THAT(text, !Catch::Contains("group_enabled_seconds"));
}

TEST_CASE("The summary shows no value where a formula's divisor is 0, and only process groups",
          "[experiment][groups]") {
  const Labels sh_ipc = {{"target", "sh"}, {"group", "ipc"}};
  const std::vector<prometheus::MetricFamily> families = {
      counter_family("instructions", {{sh_ipc, 100.0}}),
      counter_family("cycles", {{sh_ipc, 0.0}}),
  };
  auto papi = process_scope({"branch"});
  papi.family_level = "cpu";  // the papi collector's groups are not the command's
  const auto text =
      experiment_summary(families, {process_scope({"ipc"}), papi}, "sh", "sh", 0, 1.0);
  INFO(text);
  const auto ipc = line_with(text, "(ipc: ins / cyc)");
  REQUIRE_FALSE(ipc.empty());
  CHECK(ipc.find_first_not_of(' ') == ipc.find("-  "));
  CHECK_THAT(text, !Catch::Contains("(branch:"));
}

TEST_CASE("The summary of several runs: mean and relative spread per event and metric",
          "[experiment]") {
  const auto summary = two_runs();
  CHECK(summary_exit_code(summary) == 3);
  const std::string text = format_summary(summary, SummaryFormat::text);
  INFO(text);
  // Page faults 100 and 300: mean 200, sample standard deviation 141.42, 70.71 % of the mean.
  CHECK_THAT(text,
             Catch::Contains("(2 runs):") &&
                 Catch::Contains("                 200  page_faults  [software]  ( +- 70.71% )") &&
                 Catch::Contains("exit status 0, 3"));
  // CPUs utilized 0.5 and 1.5: mean 1, the same spread.
  CHECK_THAT(text, Catch::Contains("1.000  CPUs utilized  (software: clock)  ( +- 70.71% )"));
}

TEST_CASE("The CSV and JSON summaries are what python3's csv and json modules read",
          "[experiment]") {
  const auto summary = two_runs();
  struct Reading {
    SummaryFormat format;
    std::string (*read_with_python)(const std::string& body, const std::string& input);
    const char* body;  // over `rows` (CSV) or `s` (JSON)
    const char* expected;
  };
  const Reading readings[] = {
      {SummaryFormat::csv, &test::read_csv_with_python,
       "r = [x for x in rows if x[\"kind\"] == \"event\" and x[\"name\"] == \"page_faults\"][0]\n"
       "m = [x for x in rows if x[\"kind\"] == \"metric\" and x[\"formula\"] == \"clock\"][0]\n"
       "e = [x for x in rows if x[\"kind\"] == \"exit_status\"][0]\n"
       "print(r[\"mean\"], round(float(r[\"relative_stddev\"]), 4), r[\"runs\"], m[\"mean\"], "
       "e[\"mean\"])",
       "200 0.7071 2 1 3\n"},
      {SummaryFormat::json, &test::read_json_with_python,
       "e = [x for x in s[\"events\"] if x[\"name\"] == \"page_faults\"][0]\n"
       "m = [x for x in s[\"metrics\"] if x[\"formula\"] == \"clock\"][0]\n"
       "print(s[\"command\"], s[\"exit_status\"], len(s[\"runs\"]), e[\"values\"], e[\"mean\"], "
       "m[\"values\"], m[\"counted\"])",
       "sh -c \"spin, then stop\" 3 2 [100, 300] 200 [0.5, 1.5] True\n"},
  };
  for (const Reading& reading : readings) {
    const std::string text = format_summary(summary, reading.format);
    INFO(text);
    CHECK(reading.read_with_python(reading.body, text) == reading.expected);
  }
}

namespace {

// One run's region families: a region "compute" entered by two threads, calls and seconds each.
std::vector<prometheus::MetricFamily> region_run(const std::string& target, double calls,
                                                 double seconds) {
  std::vector<prometheus::MetricFamily> families;
  for (const auto& [column, value] :
       {std::pair<std::string, double>{"calls", calls}, {"seconds", seconds}}) {
    auto family = make_family(metric_name({"region", "thread"}) + "_" + column + "_total", "test",
                              prometheus::MetricType::Counter);
    for (const char* tid : {"101", "102"}) {
      add_counter(family, {{"target", target}, {"region", "compute"}, {"tid", tid}}, value / 2);
    }
    families.push_back(std::move(family));
  }
  return families;
}

ExperimentSummary region_runs() {
  ExperimentSummary summary;
  summary.command_line = "./prog";
  // Each run's sum over its two threads: 4 calls, then 1 s and 3 s inside.
  add_run(summary, region_run("prog.1", 4, 1.0), {}, "prog.1", {0, 2.0});
  add_run(summary, region_run("prog.2", 4, 3.0), {}, "prog.2", {0, 4.0});
  return summary;
}

}  // namespace

TEST_CASE("Regions over repeated runs: a mean and a spread per region and column",
          "[experiment][regions]") {
  const auto summary = region_runs();
  const std::string text = format_summary(summary, SummaryFormat::text);
  INFO(text);
  // Seconds 1 and 3: mean 2, sample standard deviation 1.414, 70.71 % of the mean.
  CHECK_THAT(text, Catch::Contains("Region compute (2 runs; each run's sum over its threads)"));
  const auto mean = line_with(text, "        mean  ");
  const auto spread = line_with(text, "          +-  ");
  CHECK_THAT(mean, Catch::Contains(" 4  ") && Catch::Contains(" 2.000000"));
  CHECK_THAT(spread, Catch::Contains("0.00%") && Catch::Contains("70.71%"));
  // One table over the runs, not one per run.
  CHECK(test::occurrences(text, "Region compute") == 1);

  CHECK(test::read_csv_with_python(
            "m = [x for x in rows if x[\"kind\"] == \"region_mean\" and x[\"name\"] == "
            "\"seconds\"][0]\n"
            "print(m[\"region\"], m[\"thread\"], m[\"mean\"], round(float(m[\"relative_stddev\"]), "
            "4), m[\"runs\"], m[\"unit\"])",
            format_summary(summary, SummaryFormat::csv)) == "compute sum 2 0.7071 2 seconds\n");
  CHECK(test::read_json_with_python(
            "r = s[\"region_means\"][0]\n"
            "c = [x for x in r[\"columns\"] if x[\"column\"] == \"seconds\"][0]\n"
            "print(r[\"region\"], c[\"values\"], c[\"mean\"], round(c[\"relative_stddev\"], 4))",
            format_summary(summary, SummaryFormat::json)) == "compute [1, 3] 2 0.7071\n");
}

TEST_CASE("An event that counts in kernel mode only is not counted in user mode, in every format",
          "[experiment][groups]") {
  // Over 2 s: 2 s of CPU time, 900 page faults, and the kernel-mode-only events' zeros.
  std::vector<prometheus::MetricFamily> families;
  for (const auto& [metric, value] : {std::pair<const char*, double>{"task_clock_seconds", 2.0},
                                      {"context_switches", 0.0},
                                      {"migrations", 0.0},
                                      {"page_faults", 900.0}}) {
    families.push_back(
        counter_family(metric, {{{{"target", "sh"}, {"group", "software"}}, value}}));
  }
  ExperimentSummary summary;
  summary.command_line = "sh";
  summary.not_measured = {{"context_switches", "counts in kernel mode only"},
                          {"migrations", "counts in kernel mode only"}};
  add_run(summary, families, {process_scope({"software"})}, "sh", {0, 2.0});
  const std::string text = format_summary(summary, SummaryFormat::text);
  INFO(text);
  CHECK_THAT(
      line_with(text, "  context_switches  [software]"),
      Catch::StartsWith("       <not counted>") && Catch::Contains("(counts in kernel mode only)"));
  CHECK_THAT(line_with(text, "(software: cs / clock)"),
             Catch::Contains("<not counted>") &&
                 Catch::Contains("context_switches counts in kernel mode only"));
  // What was measured is shown as before.
  CHECK(leading_number(line_with(text, "(software: faults / clock)")) == Approx(450));
  CHECK(test::read_json_with_python(
            "e = [x for x in s[\"events\"] if x[\"name\"] == \"context_switches\"][0]\n"
            "p = [x for x in s[\"events\"] if x[\"name\"] == \"page_faults\"][0]\n"
            "print(e[\"counted\"], e[\"mean\"], e[\"not_measured\"], p[\"counted\"], p[\"mean\"])",
            format_summary(summary, SummaryFormat::json)) ==
        "False None counts in kernel mode only True 900\n");
  CHECK(test::read_csv_with_python("e = [x for x in rows if x[\"name\"] == \"migrations\"][0]\n"
                                   "print(repr(e[\"mean\"]), e[\"runs\"], e[\"note\"])",
                                   format_summary(summary, SummaryFormat::csv)) ==
        "'' 0 counts in kernel mode only\n");
}

TEST_CASE("A run ended by a signal is said so, and a stop is part of the summary", "[experiment]") {
  ExperimentSummary summary;
  summary.command_line = "sleep 3";
  add_run(summary, {}, {}, "sleep.1", {0, 3.0, 0});
  add_run(summary, {}, {}, "sleep.2", {143, 0.5, SIGTERM});
  summary.stopped = "stopped by SIGTERM during run 2 of 5";
  summary.stopped_status = 128 + SIGTERM;
  const std::string text = format_summary(summary, SummaryFormat::text);
  INFO(text);
  CHECK_THAT(text, Catch::Contains("; exit status 0, terminated by signal 15 (SIGTERM)\n") &&
                       Catch::Contains("stopped by SIGTERM during run 2 of 5"));
  CHECK(test::read_json_with_python(
            "print(s[\"exit_status\"], s[\"runs\"][1][\"signal\"], s[\"runs\"][0][\"signal\"], "
            "s[\"stopped\"])",
            format_summary(summary, SummaryFormat::json)) ==
        "143 SIGTERM None stopped by SIGTERM during run 2 of 5\n");
  // Every run that ran exited 0: the stop's own status.
  ExperimentSummary stopped;
  add_run(stopped, {}, {}, "sleep.1", {0, 3.0, 0});
  stopped.stopped_status = 130;
  CHECK(summary_exit_code(stopped) == 130);
}
