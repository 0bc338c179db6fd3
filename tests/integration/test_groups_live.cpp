// Event groups in the process targets and containers, through the exporter binary on this
// machine's kernel: a shim (tests/shims/perf_group_trace.c) logs every perf_event_open, read(2)
// and close(2) of a perf descriptor, which shows a group opened as one kernel group and read
// with one read(2); the same events counted alone beside the group, over the same workload,
// show that the group counts what they count.
#include "tests/catch.hpp"

#include <linux/perf_event.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "tests/support/cgroup_live_support.h"
#include "tests/support/support.h"
#include "topology/topology.h"

using namespace hwperf;
using hwperf::test::TempDir;

namespace {

// One perf descriptor as the shim saw it.
struct Traced {
  long fd = -1, pid = 0, cpu = 0, group_fd = -1;
  unsigned long long read_format = 0;
  unsigned long flags = 0;
  int reads = 0;
  std::vector<std::size_t> members;  // indexes of the descriptors that named it their leader
};

std::vector<Traced> read_trace(const std::filesystem::path& path) {
  std::vector<Traced> traced;
  std::map<long, std::size_t> live;  // fd -> its descriptor now (numbers are reused)
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    Traced t;
    long fd = -1;
    if (std::sscanf(line.c_str(),
                    "open fd=%ld pid=%ld cpu=%ld group_fd=%ld read_format=%llu flags=%lu", &t.fd,
                    &t.pid, &t.cpu, &t.group_fd, &t.read_format, &t.flags) == 6) {
      if (t.group_fd >= 0 && live.count(t.group_fd) != 0) {
        traced[live[t.group_fd]].members.push_back(traced.size());
      }
      live[t.fd] = traced.size();
      traced.push_back(t);
    } else if (std::sscanf(line.c_str(), "read fd=%ld", &fd) == 1 && live.count(fd) != 0) {
      ++traced[live[fd]].reads;
    } else if (std::sscanf(line.c_str(), "close fd=%ld", &fd) == 1) {
      live.erase(fd);
    }
  }
  return traced;
}

// The group leaders of `traced` with `members` members that `keep` selects.
template <typename Keep>
std::vector<Traced> leaders(const std::vector<Traced>& traced, std::size_t members, Keep keep) {
  std::vector<Traced> found;
  for (const auto& t : traced) {
    if (t.group_fd == -1 && t.members.size() == members && keep(t)) found.push_back(t);
  }
  return found;
}

// A group of three read with one read(2): PERF_FORMAT_GROUP on the leader, its members named
// by group_fd and never read themselves, as often as each ungrouped event's descriptor.
void check_one_read_per_group(const std::vector<Traced>& traced, const Traced& group,
                              const std::vector<Traced>& alone) {
  CHECK((group.read_format & PERF_FORMAT_GROUP) != 0);
  CHECK(group.reads >= 1);
  for (const std::size_t member : group.members) {
    CHECK(traced[member].group_fd == group.fd);
    CHECK(traced[member].reads == 0);
  }
  for (const auto& event : alone) {
    if (event.cpu == group.cpu) CHECK(event.reads == group.reads);
  }
}

// Each family's series of group `group` against its series without a group label (the event
// counted alone), summed over the other labels.
void check_group_counts_like_alone(const std::vector<test::Sample>& samples,
                                   const std::map<std::string, std::string>& labels,
                                   const std::string& group,
                                   const std::vector<std::string>& families) {
  for (const auto& family : families) {
    double grouped = 0, alone = 0;
    for (const auto& sample : test::find_samples(samples, family, labels)) {
      const auto label = sample.labels.find("group");
      if (label == sample.labels.end()) alone += sample.value;
      if (label != sample.labels.end() && label->second == group) grouped += sample.value;
    }
    INFO(family << ": in group " << group << " " << grouped << ", alone " << alone);
    CHECK(grouped == Approx(alone).epsilon(0.10));
  }
}

std::size_t count_occurrences(const std::string& text, const std::string& word) {
  std::size_t count = 0;
  for (auto at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) ++count;
  return count;
}

// Whether the kernel knows a core PMU here (a VM may have none): what the refusals depend on.
bool has_hardware_pmu() {
  return std::filesystem::exists("/sys/bus/event_source/devices/cpu") ||
         std::filesystem::exists("/sys/bus/event_source/devices/cpu_core");
}

// A configuration where `collector` (its settings given) counts the three software events both
// ways: alone, and as the user's group sw3; and the shim's environment, logging to `log`.
std::filesystem::path both_ways(TempDir& dir, const std::string& collector) {
  return dir.write("hwperf.yml",
                   "groups:\n  sw3:\n    events: {clock: perf::TASK-CLOCK, faults: "
                   "perf::PAGE-FAULTS, cs: perf::CONTEXT-SWITCHES}\n"
                   "collectors:\n  papi: {enabled: false}\n  rapl: {enabled: false}\n" +
                       collector +
                       "    events: [perf::TASK-CLOCK, perf::PAGE-FAULTS, perf::CONTEXT-SWITCHES]\n"
                       "    groups: [sw3]\n");
}
test::Environment traced_by_shim(const std::filesystem::path& log) {
  // The shim is never instrumented; a sanitizer build's exporter must not insist that its
  // runtime comes first.
  return {{"LD_PRELOAD", HWPERF_PERF_GROUP_SHIM},
          {"HWPERF_SHIM_LOG", log.string()},
          {"ASAN_OPTIONS", "verify_asan_link_order=0"}};
}

}  // namespace

TEST_CASE("A process target counts a user group as one kernel group read once, as its events count",
          "[process][groups][e2e][kernel_perf]") {
  TempDir dir;
  const auto log = dir.path() / "perf.log";
  const auto config = both_ways(dir, "  process:\n");
  const std::size_t pages = 2048, runs = 8;
  const std::string loop = "i=0; while [ $i -lt " + std::to_string(runs) + " ]; do " +
                           HWPERF_TEST_WORKLOAD + " touch " + std::to_string(pages) +
                           "; i=$((i+1)); done";
  const auto run = test::run_exporter(
      {"--config.file=" + config.string(), "--once", "--output=-", "--", "sh", "-c", loop},
      60 * HWPERF_SLOWDOWN, traced_by_shim(log));
  INFO(run.err);
  REQUIRE(run.exit_code == 0);

  // The command's one thread, before its exec: one group of three and three events alone.
  const auto traced = read_trace(log);
  const auto of_target = [](const Traced& t) {
    return t.pid > 0 && (t.flags & PERF_FLAG_PID_CGROUP) == 0;
  };
  const auto groups = leaders(traced, 2, of_target);
  const auto alone = leaders(traced, 0, of_target);
  REQUIRE(groups.size() == 1);
  REQUIRE(alone.size() == 3);
  check_one_read_per_group(traced, groups[0], alone);

  const auto samples = test::parse_exposition(run.out);
  check_group_counts_like_alone(
      samples, {{"target", "sh"}}, "sw3",
      {"hwperf_process_task_clock_seconds_total", "hwperf_process_page_faults_total",
       "hwperf_process_context_switches_total"});
  CHECK(test::value_of(samples, "hwperf_process_page_faults_total",
                       {{"target", "sh"}, {"group", "sw3"}}) >= static_cast<double>(pages * runs));
  // One family per name, whichever way its events are counted.
  CHECK(count_occurrences(run.out, "# HELP hwperf_process_page_faults_total ") == 1);
  // The group's times: software events are never multiplexed, so running is all of enabled.
  const double enabled = test::value_of(samples, "hwperf_process_group_enabled_seconds_total",
                                        {{"target", "sh"}, {"group", "sw3"}});
  const double running = test::value_of(samples, "hwperf_process_group_running_seconds_total",
                                        {{"target", "sh"}, {"group", "sw3"}});
  CHECK(running > 0);
  CHECK(enabled >= running);
}

TEST_CASE(
    "A container counts a user group as one kernel group per CPU read once, as its events "
    "count",
    "[live][cgroup][groups][e2e]") {
  using namespace hwperf::test::cgroup_live;
  const Hierarchy h = perf_event_hierarchy();
  const std::string name = unique_name("groups");
  const TestCgroup parent(h.root / name);
  const TestCgroup leaf(parent.path() / "spin");
  TempDir dir;
  const auto log = dir.path() / "perf.log";
  const auto config = both_ways(dir, "  cgroup:\n    enabled: true\n    roots: [" + name +
                                         "]\n    rescan_interval_seconds: 60\n    mode: perf\n");
  test::RunningExporter exporter({"--config.file=" + config.string()}, traced_by_shim(log));
  Spinner spinner(400);
  spinner.place_in(leaf.path());
  spinner.run();
  const auto response = exporter.get("/metrics");
  REQUIRE(response.status == 200);
  INFO(exporter.stderr_text());
  REQUIRE(exporter.stop() == 0);

  // The leaf's counters on each CPU: one group of three and three events alone; the startup
  // probes are opened and closed unread.
  const Topology topology = Topology::load(TopologyConfig{});
  const auto traced = read_trace(log);
  const auto of_cgroup = [](const Traced& t) {
    return (t.flags & PERF_FLAG_PID_CGROUP) != 0 && t.reads > 0;
  };
  const auto groups = leaders(traced, 2, of_cgroup);
  const auto alone = leaders(traced, 0, of_cgroup);
  REQUIRE(groups.size() == topology.threads().size());
  REQUIRE(alone.size() == 3 * topology.threads().size());
  for (const auto& group : groups) check_one_read_per_group(traced, group, alone);

  const auto samples = test::parse_exposition(response.body);
  const std::map<std::string, std::string> of_leaf = {{"cgroup", name + "/spin"}};
  check_group_counts_like_alone(
      samples, of_leaf, "sw3",
      {"hwperf_container_task_clock_seconds_total", "hwperf_container_page_faults_total",
       "hwperf_container_context_switches_total"});
  double clock = 0, enabled = 0, running = 0;
  auto with_group = of_leaf;
  with_group["group"] = "sw3";
  for (const auto& s :
       test::find_samples(samples, "hwperf_container_task_clock_seconds_total", with_group))
    clock += s.value;
  for (const auto& s :
       test::find_samples(samples, "hwperf_container_group_enabled_seconds_total", with_group))
    enabled += s.value;
  for (const auto& s :
       test::find_samples(samples, "hwperf_container_group_running_seconds_total", with_group))
    running += s.value;
  CHECK(clock > 0);
  CHECK(running > 0);
  CHECK(enabled >= running);
}

TEST_CASE("Groups the process targets cannot count: defaults skipped and said, the user's refused",
          "[process][groups][e2e][kernel_perf]") {
  TempDir dir;
  const std::string head =
      "collectors:\n  papi: {enabled: false}\n  rapl: {enabled: false}\n  process:\n"
      "    targets: [{name: init, pid: 1}]\n";
  SECTION("--check-config says which default group counts here and why another does not") {
    const auto path = dir.write("hwperf.yml", head);
    const auto run = test::run_exporter({"--config.file=" + path.string(), "--check-config"});
    INFO(run.out << run.err);
    CHECK(run.exit_code == 0);
    CHECK_THAT(run.out, Catch::Contains("group software: countable (perf::TASK-CLOCK, "
                                        "perf::CONTEXT-SWITCHES, perf::CPU-MIGRATIONS, "
                                        "perf::PAGE-FAULTS)"));
    if (!has_hardware_pmu()) {
      CHECK_THAT(run.out, Catch::Contains("group ipc: NOT countable: ins (perf::INSTRUCTIONS: ") &&
                              Catch::Contains("without a hardware PMU"));
    }
  }
  SECTION("a group of the user's that cannot be counted is an error naming where and why") {
    const auto path = dir.write("hwperf.yml",
                                "groups:\n  mine:\n    events: {ins: perf::INSTRUCTIONS, "
                                "clock: perf::TASK-CLOCK}\n" +
                                    head + "    groups: [mine]\n");
    const auto run = test::run_exporter({"--config.file=" + path.string(), "--once"});
    INFO(run.err);
    if (has_hardware_pmu()) {
      CHECK(run.exit_code == 0);
    } else {
      CHECK(run.exit_code == 2);
      CHECK_THAT(run.err, Catch::Contains("hwperf.yml:9:") &&
                              Catch::Contains("group mine cannot be counted: ins "
                                              "(perf::INSTRUCTIONS: perf_event_open: "));
    }
  }
}
