// Experiment mode as a researcher scripts it, on the real binary with software events: stdout is
// the command's, the exposition goes where --output says, the summary is text, CSV or JSON, runs
// repeat, the exit status is a shell's, a served command's end waits for a scrape, the command is
// named after its exec, and ?target= filters.
#include "tests/catch.hpp"

#include <sys/stat.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/support.h"

using namespace hwperf;
using hwperf::test::TempDir;

namespace {

const std::vector<std::string> kHello = {"--", "sh", "-c", "echo hello"};

std::vector<std::string> with(std::vector<std::string> flags,
                              const std::vector<std::string>& command = kHello) {
  flags.insert(flags.end(), command.begin(), command.end());
  return flags;
}

}  // namespace

TEST_CASE("Experiment mode leaves stdout to the command, and --output writes the exposition",
          "[experiment][e2e][kernel_perf]") {
  SECTION("by default the command's output alone, the summary on stderr") {
    const auto run = test::run_exporter(with({"--once"}));
    INFO(run.err);
    CHECK(run.exit_code == 0);
    CHECK(run.out == "hello\n");
    CHECK_THAT(run.err, Catch::Contains("Performance counter stats for 'sh -c echo hello'"));
  }
  SECTION("--output=FILE") {
    TempDir dir;
    const auto path = dir.path() / "run.prom";
    const auto run = test::run_exporter(with({"--once", "--output=" + path.string()}));
    INFO(run.err);
    CHECK(run.exit_code == 0);
    CHECK(run.out == "hello\n");
    const auto samples = test::parse_exposition(test::read_file(path));
    // sh -c 'echo hello' runs echo: the target is named after it.
    CHECK(test::value_of(samples, "hwperf_process_task_clock_seconds_total",
                         {{"target", "echo"}, {"group", "software"}}) > 0);
    // Named after its exec, never after the exporter it was forked from.
    CHECK(
        test::find_samples(samples, "hwperf_process_info", {{"comm", "hwperf_exporter"}}).empty());
  }
  SECTION("--output=- after the command's output") {
    const auto run = test::run_exporter(with({"--once", "--output=-"}));
    INFO(run.err);
    REQUIRE(run.out.rfind("hello\n", 0) == 0);
    const auto samples = test::parse_exposition(run.out.substr(6));
    CHECK_FALSE(test::find_samples(samples, "hwperf_process_task_clock_seconds_total").empty());
  }
  SECTION("--output=- on a line of its own after output that does not end one") {
    const auto run = test::run_exporter({"--once", "--output=-", "--", "printf", "no newline"});
    INFO(run.out);
    REQUIRE(run.exit_code == 0);
    CHECK(run.out.rfind("no newline\n", 0) == 0);
    CHECK_FALSE(test::find_samples(test::parse_exposition(run.out.substr(11)),
                                   "hwperf_process_target_state")
                    .empty());
  }
  SECTION("a file that cannot be written is a configuration error before the command runs") {
    const auto run = test::run_exporter(with({"--once", "--output=/nonexistent/dir/run.prom"}));
    CHECK(run.exit_code == 2);
    CHECK(run.out.empty());
    CHECK_THAT(run.err, Catch::Contains("--output=/nonexistent/dir/run.prom: cannot write it"));
  }
}

TEST_CASE("The summary as CSV and JSON, and over repeated runs", "[experiment][e2e][kernel_perf]") {
  SECTION("CSV") {
    const auto run =
        test::run_exporter(with({"--once", "--log.level=error", "--summary.format=csv"}));
    REQUIRE(run.exit_code == 0);
    INFO(run.err);
    CHECK(test::read_csv_with_python(
              "clock = [r for r in rows if r[\"name\"] == \"task_clock_seconds\"][0]\n"
              "print(float(clock[\"mean\"]) > 0, clock[\"unit\"], rows[-1][\"kind\"], "
              "rows[-1][\"mean\"])",
              run.err) == "True seconds exit_status 0\n");
  }
  SECTION("JSON over five runs: a mean and a spread per event and metric") {
    const auto run = test::run_exporter(
        with({"--once", "--log.level=error", "--summary.format=json", "--repeat=5"}));
    REQUIRE(run.exit_code == 0);
    CHECK(run.out == "hello\nhello\nhello\nhello\nhello\n");
    INFO(run.err);
    CHECK(test::read_json_with_python(
              "lines = s[\"events\"] + s[\"metrics\"]\n"
              "counted = [l for l in lines if l[\"mean\"] is not None]\n"
              "print(len(s[\"runs\"]), len(counted) > 0, all(len(l[\"values\"]) == 5 for l in "
              "lines), all(l[\"relative_stddev\"] >= 0 for l in counted))",
              run.err) == "5 True True True\n");
  }
  SECTION("text over five runs, as perf stat -r prints it") {
    const auto run = test::run_exporter(with({"--once", "--repeat=5"}));
    INFO(run.err);
    CHECK(run.exit_code == 0);
    CHECK_THAT(run.err,
               Catch::Contains("Performance counter stats for 'sh -c echo hello' (5 runs):") &&
                   Catch::Contains("task_clock_seconds  [software]  ( +- ") &&
                   Catch::Contains("seconds elapsed  ( +- "));
  }
}

TEST_CASE("Experiment mode exits as a shell would: 126, 127, 128+N",
          "[experiment][e2e][kernel_perf]") {
  TempDir dir;
  const auto script = dir.write("not-executable.sh", "#!/bin/sh\necho never\n");
  ::chmod(script.c_str(), 0644);
  const auto missing = test::run_exporter({"--once", "--", "/nonexistent/command"});
  CHECK(missing.exit_code == 127);
  // A path is not looked for in PATH.
  CHECK_THAT(missing.err, Catch::Contains("cannot run /nonexistent/command: No such file") &&
                              !Catch::Contains("PATH"));
  const auto denied = test::run_exporter({"--once", "--", script.string()});
  CHECK(denied.exit_code == 126);
  CHECK_THAT(denied.err, Catch::Contains("not-executable.sh: Permission denied"));
  CHECK(test::run_exporter({"--once", "--", "sh", "-c", "kill -9 $$"}).exit_code == 128 + 9);
  CHECK(test::run_exporter({"--once", "--", "sh", "-c", "exit 3"}).exit_code == 3);
  // Served, the same statuses.
  CHECK(test::run_exporter({"--web.listen-address=127.0.0.1:0", "--", "/nonexistent/command"})
            .exit_code == 127);
}

TEST_CASE("Served -- CMD keeps the final counts until a scrape has read them",
          "[experiment][e2e][process][kernel_perf]") {
  test::RunningExporter exporter({"--", HWPERF_TEST_WORKLOAD, "spin", "500"});
  // The command spins half a second of CPU time and ends; the exporter says so.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (exporter.stderr_text().find("exited with status 0") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  REQUIRE_THAT(exporter.stderr_text(), Catch::Contains("exited with status 0"));
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const auto response = exporter.get("/metrics");
  INFO(exporter.stderr_text());
  REQUIRE(response.status == 200);
  const std::string out = exporter.stdout_text();
  REQUIRE(out.rfind("ns ", 0) == 0);
  const double used = std::stod(out.substr(3)) / 1e9;
  const auto samples = test::parse_exposition(response.body);
  const double counted =
      test::value_of(samples, "hwperf_process_task_clock_seconds_total",
                     {{"target", "hwperf_test_workload"}, {"group", "software"}});
  INFO("the workload used " << used << " s, the scrape counted " << counted << " s");
  // The thread's CPU clock also ran before the exec (the forked child waiting for its counters),
  // which the counters, enabled at the exec, leave out: a few microseconds.
  CHECK(counted >= 0.95 * used);
  // Read: the exporter ends, with the command's status.
  CHECK(exporter.wait_exit(30 * HWPERF_SLOWDOWN) == 0);
  CHECK_THAT(exporter.stderr_text(), Catch::Contains("a scrape read the final counts"));
}

TEST_CASE("Served -- CMD waits at most --linger for a scrape, then exits with the status",
          "[experiment][e2e][kernel_perf]") {
  const auto run = test::run_exporter(
      {"--web.listen-address=127.0.0.1:0", "--linger=1s", "--", "sh", "-c", "exit 6"});
  CHECK(run.exit_code == 6);
  CHECK_THAT(run.err, Catch::Contains("exited with status 6") &&
                          Catch::Contains("no scrape read the final counts within 1 s"));
}

TEST_CASE("Served -- CMD names the command after its exec, and ?target= filters the targets",
          "[experiment][e2e][process][kernel_perf]") {
  TempDir dir;
  const auto flag = dir.path() / "stop";
  test::RunningExporter exporter({"--linger=0s", "--", "sh", "-c",
                                  "while [ ! -e " + flag.string() + " ]; do sleep 0.05; done"});
  const auto all = test::parse_exposition(exporter.get("/metrics").body);
  // The shell, and the copies of it that it forks for each sleep, all named after its exec.
  CHECK_FALSE(
      test::find_samples(all, "hwperf_process_info", {{"target", "sh"}, {"comm", "sh"}}).empty());
  CHECK(test::find_samples(all, "hwperf_process_info", {{"comm", "hwperf_exporter"}}).empty());
  CHECK_FALSE(test::find_samples(all, "hwperf_cpu_info").empty());
  const auto sh = exporter.get("/metrics?target=sh");
  REQUIRE(sh.status == 200);
  const auto filtered = test::parse_exposition(sh.body);
  CHECK(test::value_of(filtered, "hwperf_process_target_state",
                       {{"target", "sh"}, {"state", "counting"}}) == 1);
  CHECK(test::find_samples(filtered, "hwperf_cpu_info").empty());
  const auto unknown = exporter.get("/metrics?target=postgres");
  CHECK(unknown.status == 400);
  CHECK(unknown.body == "unknown target \"postgres\"; the configured targets are: sh\n");
  dir.write("stop", "");
  CHECK(exporter.wait_exit(30 * HWPERF_SLOWDOWN) == 0);
  const std::string log = exporter.stderr_text();
  CHECK_THAT(log, Catch::Contains("counting pid") && Catch::Contains("runs sh") &&
                      !Catch::Contains("(hwperf_exporter,"));
}

TEST_CASE("The summary has a file of its own that parses whatever the command and log write",
          "[experiment][e2e][kernel_perf]") {
  TempDir dir;
  const auto path = dir.path() / "summary.json";
  // The command writes to stderr; the log is at its default level.
  const auto run =
      test::run_exporter({"--once", "--summary.format=json", "--summary.output=" + path.string(),
                          "--", "sh", "-c", "echo to-stderr >&2; echo '{' >&2"});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  CHECK(test::read_json_with_python("print(s[\"command\"], s[\"exit_status\"], len(s[\"runs\"]))",
                                    test::read_file(path)) ==
        "sh -c echo to-stderr >&2; echo '{' >&2 0 1\n");
  // stderr holds the command's lines (and the log), not the summary.
  CHECK_THAT(run.err, Catch::StartsWith("to-stderr\n{\n") || Catch::Contains("\nto-stderr\n{\n"));
  CHECK_THAT(run.err, !Catch::Contains("Performance counter stats"));
}

TEST_CASE("An experiment's stderr holds nothing of the collectors that count the whole machine",
          "[experiment][e2e][kernel_perf]") {
  // As root they are built, and on a machine without a PMU or RAPL (this VM) they have warnings
  // to give about it, which are not the experiment's.
  const auto run = test::run_exporter({"--once", "--", "sh", "-c", "echo to-stderr >&2"});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  for (const char* collector : {"papi", "rapl", "uncore", "cgroup"}) {
    CHECK_THAT(run.err, !Catch::Contains(std::string("msg=\"") + collector + ":"));
  }
  CHECK_THAT(run.err, !Catch::Contains("level=info") && Catch::Contains("to-stderr\n") &&
                          Catch::Contains("Performance counter stats for 'sh -c echo to-stderr"));
}

TEST_CASE("The target is named after the program behind a wrapper, or after --experiment.name",
          "[experiment][e2e][kernel_perf]") {
  struct Case {
    std::vector<std::string> flags;
    std::vector<std::string> command;
    const char* target;
  };
  const Case cases[] = {
      {{}, {"taskset", "-c", "0", "sleep", "0.1"}, "sleep"},
      {{}, {"env", "X=1", "sleep", "0.1"}, "sleep"},
      {{}, {"sh", "-c", "exec sleep 0.1"}, "sleep"},
      {{"--experiment.name=lab"}, {"env", "X=1", "sleep", "0.1"}, "lab"},
      {{"--experiment.name=lab", "--repeat=2"}, {"true"}, "lab.2"},
  };
  for (const auto& [flags, command, target] : cases) {
    CAPTURE(command, flags);
    TempDir dir;
    const auto path = dir.path() / "run.prom";
    std::vector<std::string> args = {"--once", "--output=" + path.string()};
    args.insert(args.end(), flags.begin(), flags.end());
    const auto run = test::run_exporter(with(args, with({"--"}, command)));
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    CHECK_FALSE(test::find_samples(test::parse_exposition(test::read_file(path)),
                                   "hwperf_process_target_state", {{"target", target}})
                    .empty());
  }
}

TEST_CASE("After --once the target says its tree ended, and a signal's end is named",
          "[experiment][e2e][kernel_perf]") {
  TempDir dir;
  const auto path = dir.path() / "run.prom";
  // The shell and two children, all ended before the exposition is made.
  const auto run = test::run_exporter({"--once", "--output=" + path.string(), "--", "sh", "-c",
                                       "sleep 0.3 & sleep 0.3 & wait; kill -TERM $$"});
  INFO(run.err);
  CHECK(run.exit_code == 128 + 15);
  const auto samples = test::parse_exposition(test::read_file(path));
  CHECK(test::value_of(samples, "hwperf_process_target_state",
                       {{"target", "sh"}, {"state", "ended"}}) == 1);
  CHECK(test::value_of(samples, "hwperf_process_target_state",
                       {{"target", "sh"}, {"state", "counting"}}) == 0);
  CHECK(test::value_of(samples, "hwperf_process_processes", {{"target", "sh"}}) == 0);
  CHECK_THAT(run.err, Catch::Contains("seconds elapsed; terminated by signal 15 (SIGTERM)"));
}

TEST_CASE("Events that count in kernel mode only are not counted where user mode is",
          "[experiment][e2e][kernel_perf]") {
  TempDir dir;
  // What an unprivileged user gets narrowed to, configured.
  const auto config = dir.write("user.yml", "collectors:\n  process:\n    domain: user\n");
  const auto run =
      test::run_exporter({"--config.file=" + config.string(), "--once", "--log.level=error",
                          "--summary.format=json", "--", "sh", "-c", "sleep 0.1; sleep 0.1"});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  CHECK(test::read_json_with_python(
            "e = {x[\"name\"]: x for x in s[\"events\"]}\n"
            "print(e[\"context_switches\"][\"counted\"], e[\"context_switches\"][\"mean\"], "
            "e[\"migrations\"][\"counted\"], e[\"context_switches\"][\"not_measured\"], "
            "e[\"page_faults\"][\"counted\"], e[\"page_faults\"][\"mean\"] > 0)",
            run.err) ==
        "False None False counts in kernel mode only: not measured in user mode True True\n");
}

TEST_CASE("Experiment mode: --repeat gives each region's columns a mean and a spread",
          "[experiment][e2e][regions][kernel_perf]") {
  TempDir dir;
  const auto path = dir.path() / "summary.json";
  // 3 runs of 4 calls of "compute" (5 ms of CPU each) and one "sleep" region.
  const auto run = test::run_exporter(
      {"--once", "--repeat=3", "--experiment.regions", "--summary.format=json",
       "--summary.output=" + path.string(), "--", HWPERF_TEST_REGIONS_PROG, "4", "5", "5"},
      60 * HWPERF_SLOWDOWN);
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  CHECK(test::read_json_with_python(
            "r = {x[\"region\"]: {c[\"column\"]: c for c in x[\"columns\"]} for x in "
            "s[\"region_means\"]}\n"
            "calls = r[\"compute\"][\"calls\"]\n"
            "secs = r[\"compute\"][\"seconds\"]\n"
            "print(sorted(r), calls[\"values\"], calls[\"mean\"], calls[\"stddev\"], "
            "len(secs[\"values\"]), secs[\"mean\"] > 0, secs[\"relative_stddev\"] >= 0)",
            test::read_file(path)) == "['compute', 'sleep'] [4, 4, 4] 4 0 3 True True\n");
}

TEST_CASE("Experiment mode: --once refuses a FIFO nobody reads and exits 1 when it cannot write",
          "[experiment][e2e][kernel_perf]") {
  TempDir dir;
  const auto fifo = dir.path() / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const auto refused = test::run_exporter({"--once", "--output=" + fifo.string(), "--", "true"});
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.err, Catch::Contains("--output=" + fifo.string() +
                                          ": a FIFO that no process has open for reading"));
  for (const char* flag : {"--output=/dev/full", "--summary.output=/dev/full"}) {
    CAPTURE(flag);
    const auto full = test::run_exporter({"--once", flag, "--", "true"});
    CHECK(full.exit_code == 1);
    CHECK_THAT(full.err, Catch::Contains(std::string(flag) + ": write failed (ENOSPC"));
  }
}
