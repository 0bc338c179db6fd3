// Process targets on this machine's kernel, with software events: a workload reports the CPU time
// each of its threads used (CLOCK_THREAD_CPUTIME_ID) and the pages it touched, and the counts the
// collector exports must agree with it.
#include "tests/catch.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <thread>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "collectors/papi/papi_presets.h"
#include "collectors/process/process_collector.h"
#include "tests/support/workload_driver.h"
#include "tests/support/support.h"
#include "topology/topology.h"

using namespace hwperf;
using hwperf::test::TempDir;
using hwperf::test::Workload;

namespace {

Config process_config(ProcessTargetConfig target, bool per_cpu = false) {
  Config config;
  config.get<ProcessCollectorConfig>().events_given = true;
  for (const char* name : {"perf::TASK-CLOCK", "perf::PAGE-FAULTS"}) {
    EventSpec event;
    event.event = name;
    config.get<ProcessCollectorConfig>().events.push_back(event);
  }
  config.get<ProcessCollectorConfig>().per_cpu = per_cpu;
  config.get<ProcessCollectorConfig>().targets.push_back(std::move(target));
  return config;
}

ProcessTargetConfig pid_target(const std::string& name, pid_t pid) {
  ProcessTargetConfig target;
  target.name = name;
  target.selector = ProcessTargetConfig::Selector::pid;
  target.pid = pid;
  return target;
}

}  // namespace

TEST_CASE("A target counts all its threads, those that existed before it was attached too",
          "[live][process]") {
  Workload workload({"threads", "2", "1", "400"});  // 2 threads now, 1 more after "go"
  const Topology topology = Topology::load(TopologyConfig{});
  auto collector = process::make_process_collector(
      process_config(pid_target("spin", workload.pid())), topology, papi::preset_catalog());
  workload.say("go");
  const auto used = workload.thread_seconds();
  REQUIRE(used.size() == 3);
  const double expected = std::accumulate(used.begin(), used.end(), 0.0);
  const auto samples = test::scrape(*collector);
  const double counted =
      test::value_of(samples, "hwperf_process_task_clock_seconds_total", {{"target", "spin"}});
  INFO("threads used " << expected << " s of CPU; counted " << counted << " s");
  CHECK(counted == Approx(expected).epsilon(0.10));
  CHECK(test::value_of(samples, "hwperf_process_target_state",
                       {{"target", "spin"}, {"state", "counting"}}) == 1);
  CHECK(test::value_of(samples, "hwperf_process_processes", {{"target", "spin"}}) == 1);
  // Scaled only when multiplexed: software events always run.
  CHECK(test::value_of(samples, "hwperf_process_event_running_seconds_total",
                       {{"target", "spin"}, {"event", "perf::TASK-CLOCK"}}) ==
        Approx(test::value_of(samples, "hwperf_process_event_enabled_seconds_total",
                              {{"target", "spin"}, {"event", "perf::TASK-CLOCK"}})));
}

TEST_CASE("With per_cpu, each thread's time lands on the CPU it ran on", "[live][process]") {
  const Topology topology = Topology::load(TopologyConfig{});
  REQUIRE(topology.threads().size() >= 2);
  Workload workload({"pinned", "400"});
  auto collector = process::make_process_collector(
      process_config(pid_target("pinned", workload.pid()), true), topology, papi::preset_catalog());
  workload.say("go");
  const auto used = workload.thread_seconds();
  REQUIRE(used.size() == 2);
  const auto samples = test::scrape(*collector);
  for (unsigned cpu : {0u, 1u}) {
    const double counted = test::value_of(samples, "hwperf_process_task_clock_seconds_total",
                                          {{"target", "pinned"}, {"cpu", std::to_string(cpu)}});
    INFO("CPU " << cpu << ": its thread used " << used[cpu] << " s, counted there " << counted);
    CHECK(counted >= 0.9 * used[cpu]);
  }
}

TEST_CASE("Children and grandchildren started after the attach are counted", "[live][process]") {
  const std::size_t pages = 16384;  // 64 MiB
  Workload workload({"fork", std::to_string(pages)});
  const Topology topology = Topology::load(TopologyConfig{});
  auto collector = process::make_process_collector(
      process_config(pid_target("tree", workload.pid())), topology, papi::preset_catalog());
  workload.say("go");
  REQUIRE(workload.line().rfind("pages ", 0) == 0);
  const auto samples = test::scrape(*collector);
  const double faults =
      test::value_of(samples, "hwperf_process_page_faults_total", {{"target", "tree"}});
  INFO("the grandchild touched " << pages << " pages; counted " << faults << " page faults");
  CHECK(faults >= static_cast<double>(pages));
}

TEST_CASE("A pidfile target follows a restarted service", "[live][process]") {
  TempDir dir;
  const auto pidfile = dir.path() / "svc.pid";
  auto first = std::make_unique<Workload>(std::vector<std::string>{"threads", "1", "0", "200"});
  dir.write("svc.pid", std::to_string(first->pid()) + "\n");
  ProcessTargetConfig target;
  target.name = "svc";
  target.selector = ProcessTargetConfig::Selector::pidfile;
  target.pidfile = pidfile.string();
  const Topology topology = Topology::load(TopologyConfig{});
  auto collector =
      process::make_process_collector(process_config(target), topology, papi::preset_catalog());
  first->say("go");
  const double first_used = first->thread_seconds().at(0);
  first.reset();  // the service stops
  collector->rescan();
  CHECK(test::value_of(test::scrape(*collector), "hwperf_process_target_state",
                       {{"target", "svc"}, {"state", "no_process"}}) == 1);

  Workload second({"threads", "1", "0", "200"});  // and starts again, under another pid
  dir.write("svc.pid", std::to_string(second.pid()) + "\n");
  collector->rescan();
  second.say("go");
  const double second_used = second.thread_seconds().at(0);
  const auto samples = test::scrape(*collector);
  CHECK(test::value_of(samples, "hwperf_process_target_state",
                       {{"target", "svc"}, {"state", "counting"}}) == 1);
  CHECK(test::find_samples(samples, "hwperf_process_info",
                           {{"target", "svc"}, {"pid", std::to_string(second.pid())}})
            .size() == 1);
  const double counted = test::sum_of(
      test::find_samples(samples, "hwperf_process_task_clock_seconds_total", {{"target", "svc"}}));
  INFO("the two runs used " << first_used << " + " << second_used << " s; counted " << counted);
  CHECK(counted >= 0.9 * (first_used + second_used));
}

TEST_CASE("Experiment mode: --once -- CMD prints the command's counts and exits with its status",
          "[process][e2e][kernel_perf]") {
  const std::size_t pages = 4096;
  const auto run = test::run_exporter(
      {"--once", "--output=-", "--", "sh", "-c",
       std::string(HWPERF_TEST_WORKLOAD) + " touch " + std::to_string(pages) + "; exit 7"});
  INFO(run.err);
  CHECK(run.exit_code == 7);
  const auto samples = test::parse_exposition(run.out);
  // The shell and the workload it started, counted from the shell's exec.
  CHECK(test::value_of(samples, "hwperf_process_page_faults_total", {{"target", "sh"}}) >=
        static_cast<double>(pages));
  CHECK(test::value_of(samples, "hwperf_process_task_clock_seconds_total", {{"target", "sh"}}) > 0);
  // The system-wide collectors over the same run.
  CHECK_FALSE(test::find_samples(samples, "hwperf_cpu_info").empty());
  // The human summary on stderr.
  CHECK_THAT(run.err, Catch::Contains("Performance counter stats for 'sh -c") &&
                          Catch::Contains("page_faults") && Catch::Contains("exit status 7"));
}

TEST_CASE("Experiment mode: -- CMD serves while the command runs and exits with it",
          "[process][e2e][kernel_perf]") {
  TempDir dir;
  const auto flag = dir.path() / "stop";
  // The command runs until the test creates the flag file. (No scrape follows its end, so no
  // --linger for one: test_experiment_e2e.cpp has that.)
  test::RunningExporter exporter(
      {"--linger=0s", "--", "sh", "-c",
       "while [ ! -e " + flag.string() + " ]; do sleep 0.05; done; exit 5"});
  const auto response = exporter.get("/metrics");
  REQUIRE(response.status == 200);
  const auto samples = test::parse_exposition(response.body);
  CHECK(test::value_of(samples, "hwperf_process_target_state",
                       {{"target", "sh"}, {"state", "counting"}}) == 1);
  dir.write("stop", "");
  const int status = exporter.wait_exit(30 * HWPERF_SLOWDOWN);
  INFO(exporter.stderr_text());
  CHECK(status == 5);
}

TEST_CASE("Process target mistakes are startup errors naming file:line:column and the remedy",
          "[process][e2e][kernel_perf]") {
  TempDir dir;
  auto run_config = [&](const std::string& yaml) {
    const auto path = dir.write("hwperf.yml", yaml);
    return test::run_exporter({"--config.file=" + path.string(), "--once"});
  };
  const std::string head = "collectors:\n  process:\n";
  SECTION("an unknown event") {
    const auto run = run_config(head +
                                "    events: [perf::NO-SUCH-EVENT]\n"
                                "    targets: [{name: self, pid: 1}]\n");
    CHECK(run.exit_code == 2);
    CHECK_THAT(run.err, Catch::Contains("hwperf.yml:3:") &&
                            Catch::Contains("perf::NO-SUCH-EVENT") &&
                            Catch::Contains("papi_native_avail"));
  }
  SECTION("an unreadable pidfile") {
    const auto run = run_config(head + "    targets:\n      - {name: svc, pidfile: " +
                                (dir.path() / "missing.pid").string() + "}\n");
    CHECK(run.exit_code == 2);
    CHECK_THAT(run.err, Catch::Contains("hwperf.yml:4:") && Catch::Contains("missing.pid") &&
                            Catch::Contains("start the service first"));
  }
  SECTION("a regular expression that does not compile") {
    const auto run = run_config(head + "    targets:\n      - {name: x, match: {comm: \"([\"}}\n");
    CHECK(run.exit_code == 2);
    CHECK_THAT(run.err,
               Catch::Contains("hwperf.yml:4:") && Catch::Contains("is not a regular expression"));
  }
  SECTION("more descriptors than the open-file limit") {
    Workload workload({"threads", "40", "0", "0"});  // 40 threads x 2 events x 2 CPUs
    const auto path =
        dir.write("hwperf.yml",
                  "collectors:\n  papi: {enabled: false}\n  rapl: {enabled: false}\n  process:\n"
                  "    per_cpu: true\n    events: [perf::TASK-CLOCK, perf::PAGE-FAULTS]\n"
                  "    targets:\n      - {name: wide, pid: " +
                      std::to_string(workload.pid()) + "}\n");
    int exit_code = -1;
    const std::string out = test::run_shell("prlimit --nofile=64:64 " + test::exporter_binary() +
                                                " --config.file=" + path.string() + " --once",
                                            &exit_code);
    INFO(out);
    CHECK(exit_code == 2);
    CHECK_THAT(out, Catch::Contains("hwperf.yml:8:") && Catch::Contains("narrow these targets") &&
                        Catch::Contains("process targets: 41 threads x 2 events x 2 CPUs"));
    workload.say("go");
  }
}

TEST_CASE("Without root, --once -- CMD counts the command's user-mode events and says why",
          "[live][process][e2e]") {
  // As a researcher on a shared machine: an ordinary user, kernel.perf_event_paranoid = 2 (the
  // kernel's default; a machine set stricter gets 2 for this test and its value back after).
  const std::string paranoid_path = "/proc/sys/kernel/perf_event_paranoid";
  const std::string before = test::read_file(paranoid_path);
  struct Restore {
    std::string path, value;
    ~Restore() { std::ofstream(path) << value; }
  } restore{paranoid_path, before};
  if (std::stoi(before) != 2) std::ofstream(paranoid_path) << "2\n";
  // The binaries where the unprivileged user can reach them.
  TempDir dir;
  std::filesystem::permissions(dir.path(), std::filesystem::perms(0755));
  for (const std::string& binary : {test::exporter_binary(), std::string(HWPERF_TEST_WORKLOAD)}) {
    std::filesystem::copy_file(binary, dir.path() / std::filesystem::path(binary).filename());
  }
  const std::size_t pages = 4096;
  int exit_code = -1;
  const auto log = dir.path() / "stderr";
  const std::string out = test::run_shell(
      "(cd / && setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all " +
          (dir.path() / "hwperf_exporter").string() + " --once --log.level=info --output=- -- " +
          (dir.path() / "hwperf_test_workload").string() + " touch " + std::to_string(pages) +
          " 2>" + log.string() + ")",
      &exit_code);
  const std::string err = test::read_file(log);
  INFO(err);
  CHECK(exit_code == 0);
  const auto samples = test::parse_exposition(out);
  CHECK(test::value_of(samples, "hwperf_process_page_faults_total",
                       {{"target", "hwperf_test_workload"}}) >= static_cast<double>(pages));
  CHECK(test::value_of(samples, "hwperf_process_domain_narrowed", {{"domain", "user"}}) == 1);
  CHECK_THAT(err, Catch::Contains("note: kernel-mode counts excluded: "
                                  "kernel.perf_event_paranoid is 2"));
  // The collectors that count the whole machine, which the researcher never asked for, are left
  // out in one line instead of a warning per event and energy interface (an info line: --once
  // logs warnings only unless asked).
  std::size_t machine_lines = 0;
  std::istringstream lines(err);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("papi") != std::string::npos || line.find("rapl") != std::string::npos ||
        line.find("uncore") != std::string::npos) {
      ++machine_lines;
      CHECK_THAT(
          line, Catch::Contains("uid 65534 without CAP_PERFMON") &&
                    Catch::Contains("papi, rapl, uncore count the whole machine and are left out"));
    }
  }
  CHECK(machine_lines == 1);
  CHECK(test::find_samples(samples, "hwperf_papi_available").empty());
}

TEST_CASE("Scrapes overlap rescans while processes come and go",
          "[process][concurrency][kernel_perf]") {
  // A match target whose processes start and end under it: four scraping threads and explicit
  // rescans race the background rescan; totals only grow.
  ProcessTargetConfig target;
  target.name = "churn";
  target.selector = ProcessTargetConfig::Selector::match;
  target.comm = "^hwperf_test_wor";
  Config config = process_config(target);
  config.get<ProcessCollectorConfig>().rescan_interval_seconds = kMinRescanIntervalSeconds;
  const Topology topology = Topology::load(TopologyConfig{});
  auto collector = process::make_process_collector(config, topology, papi::preset_catalog());
  std::atomic<bool> done{false};
  std::atomic<int> decreases{0};
  std::vector<std::thread> scrapers;
  for (int i = 0; i < 4; ++i) {
    scrapers.emplace_back([&] {
      double last = 0;
      while (!done) {
        const auto samples = test::scrape(*collector);
        const double now = test::sum_of(test::find_samples(
            samples, "hwperf_process_task_clock_seconds_total", {{"target", "churn"}}));
        if (now < last) ++decreases;
        last = now;
      }
    });
  }
  for (int round = 0; round < 6; ++round) {
    Workload workload({"threads", "1", "1", "30"});
    collector->rescan();
    workload.say("go");
    workload.thread_seconds();
  }
  collector->rescan();
  done = true;
  for (auto& scraper : scrapers) scraper.join();
  CHECK(decreases == 0);
  const auto samples = test::scrape(*collector);
  CHECK(test::sum_of(test::find_samples(samples, "hwperf_process_task_clock_seconds_total",
                                        {{"target", "churn"}})) > 0);
}
