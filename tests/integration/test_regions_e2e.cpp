// End to end with the real marker library: a program instrumented with
// PAPI's high-level API, unchanged, under `hwperf_exporter --experiment.regions -- ./prog`.
// Expectations come from what the program measured of itself; software events only.
#include "tests/catch.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/support/support.h"

using namespace hwperf;

namespace {

double reported_cpu_seconds(const std::string& stdout_text) {
  const std::string key = "compute_cpu_seconds=";
  const auto at = stdout_text.find(key);
  if (at == std::string::npos) throw std::runtime_error("the program printed: " + stdout_text);
  return std::stod(stdout_text.substr(at + key.size()));
}

}  // namespace

TEST_CASE("A PAPI_hl program's regions under --once --experiment.regions", "[live][region]") {
  test::TempDir dir;
  const auto output = (dir.path() / "run.prom").string();
  const int calls = 3;
  const double sleep_seconds = 0.3;
  const test::TimeOutsideTasks outside;
  const auto result = test::run_exporter(
      {"--once", "--experiment.regions", "--output=" + output, "--", HWPERF_TEST_REGIONS_PROG,
       std::to_string(calls), "200", std::to_string(static_cast<int>(sleep_seconds * 1000))},
      60);
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  const double spun = reported_cpu_seconds(result.out);
  const auto samples = test::parse_exposition(test::read_file(output));
  const std::string target = "hwperf_test_regions_prog";
  CHECK(test::value_of(samples, "hwperf_region_calls_total",
                       {{"target", target}, {"region", "compute"}}) == calls);
  CHECK(test::value_of(samples, "hwperf_region_calls_total",
                       {{"target", target}, {"region", "sleep"}}) == 1);
  const double compute = test::value_of(samples, "hwperf_region_task_clock_seconds_total",
                                        {{"target", target}, {"region", "compute"}});
  INFO("task-clock " << compute << " s, thread CPU time " << spun << " s");
  CHECK(test::task_clock_matches(compute, spun, outside.seconds()));
  const double asleep = test::value_of(samples, "hwperf_region_task_clock_seconds_total",
                                       {{"target", target}, {"region", "sleep"}});
  CHECK(asleep < 0.05 * sleep_seconds);
  // The summary's table per region, the sum row last.
  CHECK_THAT(result.err, Catch::Contains(" Region compute:"));
  CHECK_THAT(result.err, Catch::Contains(" Region sleep:"));
}

TEST_CASE("Served --experiment.regions: a region counter grows between two scrapes",
          "[live][region]") {
  test::RunningExporter exporter({"--experiment.regions", "--linger=0s", "--",
                                  HWPERF_TEST_REGIONS_PROG, "1", "50", "10", "4"});
  const auto value = [&] {
    const auto response = exporter.get("/metrics");
    const auto samples = test::parse_exposition(response.body);
    return test::value_of(samples, "hwperf_region_calls_total", {{"region", "compute"}});
  };
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const double first = value();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const double second = value();
  INFO(exporter.stderr_text());
  CHECK(second > first);
}

namespace {

// The marker test program's "key value..." lines (tests/helpers/marker_program.c).
std::vector<std::vector<std::string>> lines_starting(const std::string& text,
                                                     const std::string& key) {
  std::vector<std::vector<std::string>> found;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::vector<std::string> fields;
    for (std::string word; words >> word;) fields.push_back(word);
    if (!fields.empty() && fields[0] == key) found.push_back(fields);
  }
  return found;
}

}  // namespace

TEST_CASE("A likwid-instrumented program's regions under --once --experiment.regions",
          "[live][region]") {
  test::TempDir dir;
  const auto output = (dir.path() / "run.prom").string();
  const test::TimeOutsideTasks outside;
  // "compute" 4 calls of 50 ms of CPU each, "sleep" 2 calls of 150 ms, all through likwid's
  // marker calls, which the test program gets from a stand-in that aborts if it is ever reached.
  const auto result = test::run_exporter({"--once", "--experiment.regions", "--output=" + output,
                                          "--", HWPERF_TEST_MARKER_PROGRAM, "likwid", "50", "150"},
                                         60);
  INFO(result.out << result.err);
  REQUIRE(result.exit_code == 0);
  const auto compute = lines_starting(result.out, "compute");
  const auto slept = lines_starting(result.out, "sleep");
  REQUIRE(compute.size() == 1);
  REQUIRE(slept.size() == 1);
  const auto samples = test::parse_exposition(test::read_file(output));
  const std::map<std::string, std::string> compute_region{{"region", "compute"}};
  const std::map<std::string, std::string> sleep_region{{"region", "sleep"}};
  CHECK(test::value_of(samples, "hwperf_region_calls_total", compute_region) ==
        std::stod(compute[0][1]));
  CHECK(test::value_of(samples, "hwperf_region_calls_total", sleep_region) ==
        std::stod(slept[0][1]));
  CHECK(test::task_clock_matches(
      test::value_of(samples, "hwperf_region_task_clock_seconds_total", compute_region),
      std::stod(compute[0][2]) / 1e9, outside.seconds()));
  const double sleep_wall_seconds = std::stod(slept[0][2]) / 1e9;
  CHECK(test::value_of(samples, "hwperf_region_task_clock_seconds_total", sleep_region) <
        0.05 * sleep_wall_seconds);
}

TEST_CASE(
    "4 pinned threads: their per-thread counts sum to the region's, and per_cpu puts them "
    "on the CPUs they were pinned to",
    "[live][region]") {
  test::TempDir dir;
  const auto output = (dir.path() / "run.prom").string();
  const auto config = dir.write("hwperf.yml",
                                "collectors:\n  papi: {enabled: false}\n  rapl: {enabled: false}\n"
                                "  process:\n    per_cpu: true\n"
                                "    events: [perf::TASK-CLOCK, perf::PAGE-FAULTS]\n");
  const test::TimeOutsideTasks outside;
  const auto result = test::run_exporter(
      {"--config.file=" + config.string(), "--once", "--experiment.regions", "--output=" + output,
       "--", HWPERF_TEST_MARKER_PROGRAM, "threads", "4", "100"},
      60);
  INFO(result.out << result.err);
  REQUIRE(result.exit_code == 0);
  // "thread TID PINNED_CPU CPU_AT_END CPU_NS"
  const auto threads = lines_starting(result.out, "thread");
  REQUIRE(threads.size() == 4);
  const auto samples = test::parse_exposition(test::read_file(output));
  std::map<std::string, double> seconds_on_cpu, calls_on_cpu;
  double seconds_in_threads = 0;
  for (const auto& thread : threads) {
    REQUIRE(thread[2] != "-1");  // pinning failed: the CPU would mean nothing
    CHECK(thread[3] == thread[2]);
    seconds_on_cpu[thread[2]] += std::stod(thread[4]) / 1e9;
    calls_on_cpu[thread[2]] += 1;
    seconds_in_threads += std::stod(thread[4]) / 1e9;
  }
  for (const auto& [cpu, seconds] : seconds_on_cpu) {
    INFO("CPU " << cpu);
    CHECK(test::value_of(samples, "hwperf_region_calls_total",
                         {{"region", "work"}, {"cpu", cpu}}) == calls_on_cpu[cpu]);
    CHECK(test::task_clock_matches(test::value_of(samples, "hwperf_region_task_clock_seconds_total",
                                                  {{"region", "work"}, {"cpu", cpu}}),
                                   seconds, outside.seconds(std::stoi(cpu))));
  }
  // Only the CPUs the threads were pinned to have the region.
  CHECK(test::find_samples(samples, "hwperf_region_calls_total", {{"region", "work"}}).size() ==
        seconds_on_cpu.size());
  const auto per_thread = test::find_samples(
      samples, "hwperf_region_thread_task_clock_seconds_total", {{"region", "work"}});
  CHECK(per_thread.size() == threads.size());
  const double region_total = test::sum_of(
      test::find_samples(samples, "hwperf_region_task_clock_seconds_total", {{"region", "work"}}));
  CHECK(test::sum_of(per_thread) == Approx(region_total).epsilon(1e-9));
  CHECK(test::task_clock_matches(region_total, seconds_in_threads, outside.seconds()));
}

namespace {

// hwperf_exporter --once --experiment.regions -- COMMAND..., counting task-clock and page-faults
// (task-clock leads the group), with the cache lab (tests/helpers/cache_lab.c) somewhere in
// COMMAND. Checks that each of its regions was counted once, with the page faults the program
// counted itself; returns what the command printed and the run's samples.
std::pair<std::string, std::vector<test::Sample>> check_cache_lab_regions(
    const std::vector<std::string>& command) {
  test::TempDir dir;
  const auto output = (dir.path() / "run.prom").string();
  const auto config = dir.write("hwperf.yml",
                                "collectors:\n  papi: {enabled: false}\n  rapl: {enabled: false}\n"
                                "  process:\n    events: [perf::TASK-CLOCK, perf::PAGE-FAULTS]\n");
  std::vector<std::string> args{"--config.file=" + config.string(), "--once",
                                "--experiment.regions", "--output=" + output, "--"};
  args.insert(args.end(), command.begin(), command.end());
  const auto result = test::run_exporter(args, 60);
  INFO(result.out << result.err);
  REQUIRE(result.exit_code == 0);
  const auto samples = test::parse_exposition(test::read_file(output));
  for (const std::string region : {"init", "kernel"}) {
    CAPTURE(region);
    const auto own = lines_starting(result.out, "faults");
    const auto line = std::find_if(own.begin(), own.end(),
                                   [&](const auto& fields) { return fields.at(1) == region; });
    REQUIRE(line != own.end());
    const double faults = std::stod(line->at(2));
    CHECK(faults > 100);  // n = 300: a, b and c are 176 fresh pages each
    const auto calls =
        test::find_samples(samples, "hwperf_region_calls_total", {{"region", region}});
    const auto counted =
        test::find_samples(samples, "hwperf_region_page_faults_total", {{"region", region}});
    REQUIRE(calls.size() == 1);
    REQUIRE(counted.size() == 1);
    CHECK(calls[0].value == 1);
    CHECK(counted[0].value == faults);
  }
  return {result.out, samples};
}

// The families a Markdown page's tables document, each row's first cell a family name (`<name>`
// standing for any event's) and its third the labels ("as above": the previous row's): name
// pattern -> labels.
std::map<std::string, std::set<std::string>> documented_families(const std::string& page) {
  std::map<std::string, std::set<std::string>> families;
  std::istringstream lines(page);
  const std::regex label("[a-z_]+");
  std::set<std::string> previous;  // a row whose labels are "as above"
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("| `hwperf_", 0) != 0) continue;
    std::vector<std::string> cells;
    std::istringstream row(line.substr(1));
    for (std::string cell; std::getline(row, cell, '|');) cells.push_back(cell);
    if (cells.size() < 3) continue;
    const auto name_end = cells[0].find('`', 2);
    std::set<std::string>& labels = families[cells[0].substr(2, name_end - 2)];
    if (cells[2].find("as above") != std::string::npos) {
      labels = previous;
      continue;
    }
    for (std::sregex_iterator it(cells[2].begin(), cells[2].end(), label), end; it != end; ++it) {
      labels.insert(it->str());
    }
    previous = labels;
  }
  return families;
}

}  // namespace

TEST_CASE("Every region family of a -- CMD run is documented on the region page with its labels",
          "[live][region]") {
  // Issue 35, item 4: hwperf_region_thread_*{tid} was on no page (and the process page said no
  // counter carries a tid). Each family is matched to its row, the most specific pattern first.
  const auto documented = documented_families(
      test::read_file(std::string(HWPERF_SOURCE_DIR) + "/docs/collectors/region.md"));
  REQUIRE(!documented.empty());
  const auto samples = check_cache_lab_regions({HWPERF_TEST_CACHE_LAB, "papi", "300"}).second;
  std::set<std::string> families;
  for (const auto& sample : samples) {
    if (sample.name.rfind("hwperf_region_", 0) != 0) continue;
    CAPTURE(sample.name);
    families.insert(sample.name);
    std::string row;  // its own row, else the longest pattern it matches
    for (const auto& [pattern, labels] : documented) {
      if (pattern == sample.name) {
        row = pattern;
        break;
      }
      const std::regex expression(std::regex_replace(pattern, std::regex("<name>"), "[a-z0-9_]+"));
      if (std::regex_match(sample.name, expression) && pattern.size() > row.size()) row = pattern;
    }
    REQUIRE(!row.empty());
    CAPTURE(row);
    for (const auto& [label, value] : sample.labels) {
      CAPTURE(label);
      CHECK(documented.at(row).count(label) == 1);
    }
  }
  CHECK(families.size() > 3);  // the per-region and per-thread families at least
}

TEST_CASE("The cache lab under --experiment.regions: each region's page faults are its own",
          "[live][region]") {
  // Issue 35, item 1: the kernel region had reported a median of 560 faults of 624, a likwid
  // init region 0, 0 and 49 of 624. Ten runs each, every one exact.
  const std::string api = GENERATE("papi", "likwid");
  const int run = GENERATE(range(0, 10));
  CAPTURE(api, run);
  check_cache_lab_regions({HWPERF_TEST_CACHE_LAB, api, "300"});
}

TEST_CASE("The cache lab's regions are counted behind the wrappers a lab runs programs with",
          "[live][region]") {
  // Issue 35, item 2: behind taskset, env or sh -c the program lost the segment's descriptor (the
  // library had made it close-on-exec in the wrapper, which is preloaded too) and no region was
  // reported. The last sh -c forks the program and runs on after it: two processes hold the
  // segment. (The target's name is the wrapper's: not checked here.)
  const std::string lab = HWPERF_TEST_CACHE_LAB;
  const auto command =
      GENERATE_COPY(std::vector<std::string>{"taskset", "-c", "1", lab, "papi", "300"},
                    std::vector<std::string>{"env", "X=1", lab, "likwid", "300"},
                    std::vector<std::string>{"sh", "-c", "'" + lab + "' papi 300"},
                    std::vector<std::string>{"sh", "-c", "'" + lab + "' papi 300; echo done"});
  CAPTURE(command);
  const std::string out = check_cache_lab_regions(command).first;
  if (command.back().find("echo done") != std::string::npos) {
    CHECK_THAT(out, Catch::Contains("done"));
  }
}
