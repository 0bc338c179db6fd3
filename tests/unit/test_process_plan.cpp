// Process targets without perf calls: procfs parsing, per-interval multiplex scaling, which
// processes a target attaches (pid reuse, descendants counted through inherit, pidfiles) and the
// configuration of targets.
#include "tests/catch.hpp"

#include <unistd.h>

#include <string>

#include "collectors/perf/perf_event.h"
#include "collectors/process/process_collector.h"
#include "collectors/process/target_plan.h"
#include "config/errors.h"
#include "collectors/configuration.h"
#include "tests/support/support.h"
#include "tests/support/counting_fakes.h"

using namespace hwperf;
using namespace hwperf::process;

namespace {

ProcStat proc(pid_t pid, pid_t ppid, std::uint64_t start, const std::string& comm = "app",
              char state = 'S') {
  ProcStat stat;
  stat.identity = {pid, start};
  stat.ppid = ppid;
  stat.comm = comm;
  stat.state = state;
  return stat;
}

Snapshot snapshot_of(std::initializer_list<ProcStat> processes, std::uint64_t now = 1000) {
  Snapshot snapshot;
  snapshot.now_ticks = now;
  for (const auto& process : processes) snapshot.processes[process.identity.pid] = process;
  return snapshot;
}

ProcessFacts no_facts() {
  ProcessFacts facts;
  facts.exe = [](pid_t) { return std::string(); };
  facts.cmdline = [](pid_t) { return std::string(); };
  return facts;
}

// A target named `name` that finds its process by comm (`value` is the regex), by a pidfile
// (`value` is its path) or by pid (`value` unused; the caller sets the pid).
ProcessTargetConfig target(const std::string& name, ProcessTargetConfig::Selector selector,
                           const std::string& value) {
  ProcessTargetConfig config;
  config.name = name;
  config.selector = selector;
  (selector == ProcessTargetConfig::Selector::match ? config.comm : config.pidfile) = value;
  return config;
}

ProcessTargetConfig pid_target(long pid) {
  ProcessTargetConfig config = target("app", ProcessTargetConfig::Selector::pid, "");
  config.pid = pid;
  return config;
}

std::string config_problems(const std::string& yaml) {
  return test::config_error(yaml, "targets.yml");
}

}  // namespace

TEST_CASE("/proc/PID/stat is read up to the last parenthesis of the comm", "[process]") {
  const auto stat = parse_proc_stat(
      "4242 (a (weird) name) R 17 4242 4242 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 3 0 987654 "
      "1000 100 18446744073709551615\n");
  REQUIRE(stat);
  CHECK(stat->identity.pid == 4242);
  CHECK(stat->comm == "a (weird) name");
  CHECK(stat->state == 'R');
  CHECK(stat->ppid == 17);
  CHECK(stat->identity.start_ticks == 987654);
  CHECK_FALSE(parse_proc_stat("4242 no parenthesis R 1"));
  CHECK_FALSE(parse_proc_stat("4242 (short) R 1 2 3"));
}

TEST_CASE("Multiplexed counts follow each interval's running share, not the lifetime one",
          "[process][perf]") {
  // 10 s alone on a counter at 1e9 events/s; then 10 s sharing it (on a quarter of the time, a
  // profiler came) while the program runs at 2e9 events/s: 5e9 counted in 2.5 s of 10 s.
  const perf::Reading start{0, 0, 0};
  const perf::Reading alone{10'000'000'000ull, 10'000'000'000ull, 10'000'000'000ull};
  const perf::Reading shared{15'000'000'000ull, 20'000'000'000ull, 12'500'000'000ull};
  const auto first = perf::delta_between(start, alone);
  CHECK_FALSE(first.scaled);
  CHECK(first.count == first.raw_count);
  const auto second = perf::delta_between(alone, shared);
  CHECK(second.scaled);
  CHECK(second.raw_count == shared.value - alone.value);
  // The interval's own share (running / enabled of these 10 s) gives the program's real rate.
  const double interval_seconds = static_cast<double>(shared.enabled_ns - alone.enabled_ns) / 1e9;
  const double share = static_cast<double>(shared.running_ns - alone.running_ns) /
                       static_cast<double>(shared.enabled_ns - alone.enabled_ns);
  const auto counted = static_cast<double>(second.count);
  CHECK(counted == Approx(static_cast<double>(second.raw_count) / share));
  CHECK(counted / interval_seconds == Approx(2e9));
  // Scaling the totals by their lifetime share (what PAPI does) gives another, wrong, rate.
  auto lifetime = [](const perf::Reading& r) {
    return static_cast<double>(r.value) * static_cast<double>(r.enabled_ns) /
           static_cast<double>(r.running_ns);
  };
  const double lifetime_rate = (lifetime(shared) - lifetime(alone)) / interval_seconds;
  CHECK(lifetime_rate != Approx(2e9).epsilon(0.05));
}

TEST_CASE("Scaling never overflows, and a reading that goes back counts nothing",
          "[process][perf]") {
  const perf::Reading before{0, 0, 0};
  // count x enabled is 2^104 here: 128-bit arithmetic gives exactly 3 x 2^62.
  const perf::Reading huge{1ull << 62, 3ull << 40, 1ull << 40};
  const auto scaled = perf::delta_between(before, huge);
  CHECK(scaled.scaled);
  CHECK(scaled.count == 3ull << 62);
  // A result beyond 64 bits saturates rather than wrapping to a small number.
  const auto beyond = perf::delta_between(before, {1ull << 63, 4ull << 40, 1ull << 40});
  CHECK(beyond.count == UINT64_MAX);
  const auto backwards = perf::delta_between(huge, before);
  CHECK(backwards.count == 0);
  CHECK(backwards.raw_count == 0);
  const perf::Reading never_ran{0, 5'000'000, 0};
  const auto idle = perf::delta_between(before, never_ran);
  CHECK(idle.not_counted);
  CHECK(idle.count == 0);
}

TEST_CASE("A pid target binds to the process it first saw; a reused pid is a stranger",
          "[process]") {
  TargetPlan plan(pid_target(100));
  auto actions = plan.update(snapshot_of({proc(1, 0, 1), proc(100, 1, 500)}), no_facts(), {});
  REQUIRE(actions.attach.size() == 1);
  CHECK(actions.attach[0].identity.start_ticks == 500);
  plan.attached(actions.attach[0].identity, 600);

  // Same pid, later start: the first process ended and the kernel handed its pid on.
  actions = plan.update(snapshot_of({proc(1, 0, 1), proc(100, 1, 900)}), no_facts(), {});
  CHECK(actions.attach.empty());
  REQUIRE(actions.detach.size() == 1);
  CHECK(actions.detach[0].start_ticks == 500);
  CHECK(actions.counted.empty());
  CHECK(actions.no_process == "process 100 exited");
}

TEST_CASE("Children started after the attach are counted through inherit, not attached again",
          "[process]") {
  TargetPlan plan(target("make", ProcessTargetConfig::Selector::match, "^make$"));
  // make (10) existed; attached at tick 200.
  auto actions = plan.update(
      snapshot_of({proc(1, 0, 1, "init"), proc(10, 1, 100, "make"), proc(11, 10, 150, "make")}),
      no_facts(), {});
  REQUIRE(actions.attach.size() == 2);  // 11 was started before anything counted: its own root
  plan.attached(actions.attach[0].identity, 200);
  plan.attached(actions.attach[1].identity, 200);

  // A sub-make (12) and its compiler (13) start after the attach: counted, never attached.
  const auto later =
      snapshot_of({proc(1, 0, 1, "init"), proc(10, 1, 100, "make"), proc(11, 10, 150, "make"),
                   proc(12, 10, 300, "make"), proc(13, 12, 310, "cc1")});
  actions = plan.update(later, no_facts(), {});
  CHECK(actions.attach.empty());
  CHECK(actions.counted.size() == 4);

  // make 10 ends; the compiler was reparented to init and still runs: 10's counters stay open.
  const auto orphaned =
      snapshot_of({proc(1, 0, 1, "init"), proc(11, 10, 150, "make"), proc(13, 1, 310, "cc1")});
  actions = plan.update(orphaned, no_facts(), {});
  CHECK(actions.detach.empty());
  CHECK(actions.counted.size() == 2);

  // Once the compiler is gone too, they can close.
  actions =
      plan.update(snapshot_of({proc(1, 0, 1, "init"), proc(11, 10, 150, "make")}), no_facts(), {});
  REQUIRE(actions.detach.size() == 1);
  CHECK(actions.detach[0].pid == 10);
}

TEST_CASE("A child that existed before the attach is not counted by a pid target", "[process]") {
  TargetPlan plan(pid_target(20));
  auto actions = plan.update(snapshot_of({proc(20, 1, 100), proc(21, 20, 150), proc(22, 20, 400)}),
                             no_facts(), {});
  REQUIRE(actions.attach.size() == 1);
  plan.attached(actions.attach[0].identity, 300);
  actions = plan.update(snapshot_of({proc(20, 1, 100), proc(21, 20, 150), proc(22, 20, 400)}),
                        no_facts(), {});
  // 21 predates the counters (inherit cannot reach it); 22 started after and is counted.
  std::vector<pid_t> counted;
  for (const auto& process : actions.counted) counted.push_back(process.identity.pid);
  CHECK(counted == std::vector<pid_t>{20, 22});
}

TEST_CASE("A pidfile target follows the service, but not a stranger holding its old pid",
          "[process]") {
  TargetPlan plan(target("svc", ProcessTargetConfig::Selector::pidfile, "/run/svc.pid"));
  auto actions = plan.update(snapshot_of({proc(30, 1, 100)}), no_facts(),
                             PidfileReading{30, 0, std::uint64_t{120}});
  REQUIRE(actions.attach.size() == 1);
  plan.attached(actions.attach[0].identity, 130);

  // Restarted: new pid, file rewritten after the new process started.
  actions = plan.update(snapshot_of({proc(31, 1, 500)}), no_facts(),
                        PidfileReading{31, 0, std::uint64_t{510}});
  REQUIRE(actions.attach.size() == 1);
  CHECK(actions.attach[0].identity.pid == 31);
  CHECK(actions.detach.size() == 1);
  plan.attached(actions.attach[0].identity, 520);
  plan.detached(actions.detach[0]);

  // The service died without removing its pidfile, and another process got pid 31.
  actions = plan.update(snapshot_of({proc(31, 1, 900, "stranger")}), no_facts(),
                        PidfileReading{31, 0, std::uint64_t{510}});
  CHECK(actions.attach.empty());
  CHECK(actions.counted.empty());
  CHECK_THAT(actions.no_process, Catch::Contains("the pid was reused"));
}

TEST_CASE("A match target selects by comm, executable and command line together", "[process]") {
  ProcessTargetConfig config = target("py", ProcessTargetConfig::Selector::match, "python");
  config.cmdline = "train\\.py";
  TargetPlan plan(config);
  ProcessFacts facts;
  facts.exe = [](pid_t) { return std::string("/usr/bin/python3"); };
  facts.cmdline = [](pid_t pid) {
    return std::string(pid == 40 ? "python3 train.py --epochs 3" : "python3 serve.py");
  };
  const auto actions =
      plan.update(snapshot_of({proc(40, 1, 100, "python3"), proc(41, 1, 100, "python3"),
                               proc(42, 1, 100, "bash")}),
                  facts, {});
  REQUIRE(actions.attach.size() == 1);
  CHECK(actions.attach[0].identity.pid == 40);
}

TEST_CASE("Process targets in the configuration: errors name file:line:column",
          "[process][config]") {
  const Config config = parse_config_text(R"(
collectors:
  process:
    per_cpu: true
    events: [perf::TASK-CLOCK]
    targets:
      - {name: a, pid: 12}
      - {name: b, pidfile: /run/b.pid}
      - {name: c, match: {comm: "^cc1$", cmdline: "-O2"}}
)",
                                          "targets.yml");
  const auto& targets = config.get<ProcessCollectorConfig>().targets;
  REQUIRE(targets.size() == 3);
  CHECK(targets[0].pid == 12);
  CHECK(targets[1].pidfile == "/run/b.pid");
  CHECK(targets[2].comm == "^cc1$");
  CHECK(config.get<ProcessCollectorConfig>().per_cpu);
  const Config again = parse_config_text(dump_config(config), "dump.yml");
  CHECK(again.get<ProcessCollectorConfig>().targets.size() == 3);
  CHECK(again.get<ProcessCollectorConfig>().targets[2].cmdline == "-O2");

  using Catch::Contains;
  CHECK_THAT(config_problems("collectors: {process: {targets: [{name: x, match: {comm: \"(\"}}]}}"),
             Contains("targets.yml:1:") && Contains("is not a regular expression"));
  CHECK_THAT(config_problems("collectors: {process: {targets: [{name: x, pid: 1, pidfile: /p}]}}"),
             Contains("give exactly one of pid, pidfile, match (2 given)"));
  CHECK_THAT(config_problems("collectors: {process: {targets: [{pid: 1}]}}"),
             Contains("missing required key \"name\""));
  CHECK_THAT(
      config_problems("collectors: {process: {targets: [{name: x, pid: 1}, {name: x, pid: 2}]}}"),
      Contains("names an earlier target too"));
  CHECK_THAT(config_problems("collectors: {process: {targets: [{name: x, pid: -4}]}}"),
             Contains("expected a process id"));
  CHECK_THAT(config_problems("collectors: {process: {targets: [{name: x, match: {}}]}}"),
             Contains("give at least one of comm, exe, cmdline"));
  CHECK_THAT(config_problems("collectors: {process: {rescan_interval_seconds: 0.01}}"),
             Contains("expected 0.1 to 60 seconds"));
  CHECK_THAT(config_problems("collectors: {process: {targets: [{name: x, pid: 1, color: red}]}}"),
             Contains("color"));
}

// Issue 39: the targets are configured, so their counts' and times' series are fixed; a scrape
// writes them from text made once, the same bytes as collect()'s families.
TEST_CASE("process targets write their counts from text made once, the bytes of their families",
          "[process][exposition]") {
  test::FakeCounterBoard board;
  board.derived = true;
  const test::FakeCountingBackend backend(board);
  ProcessCollectorSettings settings;
  settings.procfs = "/proc";
  ProcessTargetConfig self;
  self.name = "self";
  self.pid = ::getpid();
  settings.targets = {self};
  settings.events = {test::counted_event("process", "perf::TASK-CLOCK", "task_clock_seconds", 1,
                                         events::Unit::nanoseconds),
                     test::counted_event("process", "perf::PAGE-FAULTS", "page_faults", 2)};
  perf::CountedGroup group;
  group.name = "pair";
  group.members = {test::counted_event("process", "perf::CYCLES", "cycles", 3),
                   test::counted_event("process", "perf::INSTRUCTIONS", "instructions", 4)};
  settings.groups = {group};
  settings.rescan_interval_seconds = kMaxRescanIntervalSeconds;  // rescans are the test's
  settings.backend = &backend;
  const bool per_cpu = GENERATE(false, true);
  CAPTURE(per_cpu);
  if (per_cpu) settings.cpus = test::two_socket_topology().threads();
  ProcessCollector collector(settings);
  REQUIRE(capabilities_of(collector).text != nullptr);
  for (const auto format : {ExpositionFormat::text_0_0_4, ExpositionFormat::openmetrics_1_0_0}) {
    std::vector<prometheus::MetricFamily> families;
    collector.collect(families);
    std::string expected = "before\n";
    append_families(expected, families, format);
    std::string text = "before\n";
    collect_text(collector, text, format);
    CHECK(text == expected);
    CHECK_THAT(text, Catch::Contains("hwperf_process_cycles_total{target=\"self\",group=\"pair\""));
  }
}
