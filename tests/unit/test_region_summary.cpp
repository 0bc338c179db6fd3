// The --once summary's region tables (likwid-perfctr -m's shape) from the per-thread region
// families the process collector exports for a command's segment.
#include "tests/catch.hpp"

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "collectors/metrics.h"
#include "exporter/experiment/experiment.h"
#include "tests/support/support.h"

using namespace hwperf;

namespace {

struct Thread {
  std::string region, tid;
  double calls, seconds, faults;
};
const std::vector<Thread> kThreads = {
    {"compute", "101", 3, 1.5, 40}, {"compute", "102", 5, 2.25, 60}, {"sleep", "101", 1, 0.3, 2}};

std::vector<prometheus::MetricFamily> thread_families(const std::string& target) {
  std::vector<prometheus::MetricFamily> families;
  for (const char* metric : {"calls", "seconds", "page_faults"}) {
    auto family = make_family(counter_name({"region", "thread", metric}), "test",
                              prometheus::MetricType::Counter);
    for (const auto& thread : kThreads) {
      const double value = std::string(metric) == "calls"     ? thread.calls
                           : std::string(metric) == "seconds" ? thread.seconds
                                                              : thread.faults;
      add_counter(family, {{"target", target}, {"region", thread.region}, {"tid", thread.tid}},
                  value);
    }
    // Another target's regions are not this run's.
    add_counter(family, {{"target", "other"}, {"region", "compute"}, {"tid", "9"}}, 1000.0);
    families.push_back(std::move(family));
  }
  return families;
}

}  // namespace

TEST_CASE("The summary prints each region per thread, then the sum", "[experiment][region]") {
  ExperimentSummary summary;
  summary.command_line = "./prog";
  add_run(summary, thread_families("prog"), {}, "prog", {0, 3.0});
  REQUIRE(summary.regions.size() == 2);
  const RegionTable& compute = summary.regions[0];
  CHECK(compute.region == "compute");
  CHECK(compute.columns == std::vector<std::string>{"calls", "seconds", "page_faults"});
  REQUIRE(compute.rows.size() == 3);
  std::map<std::string, double> sum;
  for (const auto& thread : kThreads) {
    if (thread.region != "compute") continue;
    sum["calls"] += thread.calls;
    sum["seconds"] += thread.seconds;
    sum["page_faults"] += thread.faults;
  }
  CHECK(compute.rows[0].thread == "101");
  CHECK(compute.rows[0].values == std::vector<double>{3, 1.5, 40});
  CHECK(compute.rows.back().thread == "sum");
  CHECK(compute.rows.back().values ==
        std::vector<double>{sum["calls"], sum["seconds"], sum["page_faults"]});

  const std::string text = format_summary(summary, SummaryFormat::text);
  INFO(text);
  const auto at = text.find(" Region compute:");
  REQUIRE(at != std::string::npos);
  std::istringstream lines(text.substr(at));
  std::string line;
  std::getline(lines, line);  // the title
  std::getline(lines, line);  // the header
  CHECK_THAT(line, Catch::Contains("thread") && Catch::Contains("page_faults"));
  std::getline(lines, line);
  std::getline(lines, line);
  std::getline(lines, line);  // the sum
  std::istringstream cells(line);
  std::string thread;
  double calls = 0, seconds = 0, faults = 0;
  cells >> thread >> calls >> seconds >> faults;
  CHECK(thread == "sum");
  CHECK(calls == sum["calls"]);
  CHECK(seconds == Approx(sum["seconds"]));
  CHECK(faults == sum["page_faults"]);

  const std::string json = format_summary(summary, SummaryFormat::json);
  // Read back by python3: the sum row adds up the thread rows, and its calls are the sum above.
  CHECK(test::read_json_with_python(
            "r = [x for x in s[\"regions\"] if x[\"region\"] == \"compute\"][0]\n"
            "rows = r[\"rows\"]\n"
            "print(r[\"run\"], r[\"columns\"], rows[-1][\"thread\"], [sum(x[\"values\"][c] for x "
            "in rows[:-1]) == rows[-1][\"values\"][c] for c in range(3)], "
            "int(rows[-1][\"values\"][0]))",
            json) == "1 ['calls', 'seconds', 'page_faults'] sum [True, True, True] " +
                         std::to_string(static_cast<int>(sum["calls"])) + "\n");
}

TEST_CASE("The CSV summary has a row per region, thread and column", "[experiment][region]") {
  ExperimentSummary summary;
  summary.command_line = "./prog";
  add_run(summary, thread_families("prog"), {}, "prog", {0, 3.0});
  add_run(summary, thread_families("prog"), {}, "prog", {0, 3.0});
  REQUIRE(summary.regions.size() == 4);
  std::size_t region_values = 0;
  for (const auto& table : summary.regions)
    region_values += table.rows.size() * table.columns.size();
  const std::string csv = format_summary(summary, SummaryFormat::csv);
  INFO(csv);
  // Read back by python3: every row has every column; the region rows are as many as the tables'
  // cells; run 2's sum row of compute's calls adds up its threads' rows; a region's seconds carry
  // their unit; the rows before the regions leave region, thread and run empty.
  const std::string script =
      "rows = list(rows)\n"
      "c = [r for r in rows if r[\"kind\"] == \"region\" and r[\"region\"] == \"compute\" and "
      "r[\"name\"] == \"calls\" and r[\"run\"] == \"2\"]\n"
      "seconds = [r for r in rows if r[\"kind\"] == \"region\" and r[\"name\"] == \"seconds\"]\n"
      "done = [r for r in rows if r[\"kind\"] == \"exit_status\"][0]\n"
      "print(all(None not in r.values() for r in rows), sum(r[\"kind\"] == \"region\" for r in "
      "rows),"
      " [r[\"thread\"] for r in c], sum(float(r[\"mean\"]) for r in c[:-1]) == "
      "float(c[-1][\"mean\"]),"
      " seconds[0][\"unit\"], [done[\"region\"], done[\"thread\"], done[\"run\"]])";
  CHECK(test::read_csv_with_python(script, csv) ==
        "True " + std::to_string(region_values) +
            " ['101', '102', 'sum'] True seconds ['', '', '']\n");
}
