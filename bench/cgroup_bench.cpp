// hwperf_bench_cgroup: what container counting costs on this machine (prints figures, never
// pass/fail). Run as root: it makes cgroups in the hierarchy perf_event is bound to (and removes
// them), and cgroup events need CAP_PERFMON.
//   1. a scrape of N cgroups (256) x every CPU x 3 software events (perf::CPU-CLOCK,
//      CONTEXT-SWITCHES, PAGE-FAULTS), collected and serialized as /metrics does: thread CPU
//      time per scrape, p50 and p99;
//   2. the resident set after those scrapes;
//   3. a rescan of the hierarchy with nothing changed (the background walk): CPU per rescan and
//      the share of a core at the default interval; the first rescan, which opens everything;
//   4. what monitoring costs every context switch: a pipe ping-pong between two processes in one
//      of the monitored cgroups, round trip with the collector and without.
//   hwperf_bench_cgroup [--cgroups N] [--scrapes N]
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "bench/bench_support.h"
#include "collectors/papi/papi_presets.h"
#include "collectors/cgroup/cgroup_collector.h"
#include "collectors/cgroup/hierarchy.h"
#include "common/log.h"
#include "exporter/exposition.h"
#include "topology/topology.h"

namespace hwperf::bench {
namespace {

void report(const std::string& what, std::vector<std::int64_t> samples) {
  const auto p50 = percentile(samples, 0.50);
  const auto p99 = percentile(samples, 0.99);
  std::printf("%-62s %8zu %10.1f %10.1f\n", what.c_str(), samples.size(),
              static_cast<double>(p50) / 1e3, static_cast<double>(p99) / 1e3);
}

// This process's cgroup in the perf_event hierarchy, from /proc/self/cgroup.
std::string own_cgroup(bool v2) {
  std::ifstream self("/proc/self/cgroup");
  for (std::string line; std::getline(self, line);) {
    if (v2 ? line.rfind("0::", 0) == 0 : line.find(":perf_event:") != std::string::npos) {
      return line.substr(line.find(':', line.find(':') + 1) + 1);
    }
  }
  return "/";
}

// Round trips of one byte between this process and a child over two pipes, both in `cgroup`
// meanwhile; nanoseconds per round trip.
double ping_pong_ns(const std::string& hierarchy_root, bool v2, const std::string& cgroup,
                    int round_trips) {
  int there[2], back[2];
  if (::pipe(there) != 0 || ::pipe(back) != 0) return 0;
  const auto place = [](const std::string& where, pid_t pid) {
    std::ofstream(where + "/cgroup.procs") << pid << std::flush;
  };
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(there[1]);  // else its own copy keeps the pipe open and the read never ends
    ::close(back[0]);
    char byte;
    while (::read(there[0], &byte, 1) == 1) {
      if (::write(back[1], &byte, 1) != 1) break;
    }
    ::_exit(0);
  }
  const std::string home = hierarchy_root + own_cgroup(v2);
  place(cgroup, child);
  place(cgroup, ::getpid());
  char byte = 'x';
  const std::int64_t start = wall_ns();
  for (int i = 0; i < round_trips; ++i) {
    if (::write(there[1], &byte, 1) != 1 || ::read(back[0], &byte, 1) != 1) break;
  }
  const std::int64_t elapsed = wall_ns() - start;
  place(home, ::getpid());
  ::close(there[1]);
  ::waitpid(child, nullptr, 0);
  ::close(there[0]);
  ::close(back[0]);
  ::close(back[1]);
  return static_cast<double>(elapsed) / round_trips;
}

}  // namespace
}  // namespace hwperf::bench

int main(int argc, char** argv) {
  using namespace hwperf;
  using namespace hwperf::bench;
  unsigned cgroups = 256;
  std::size_t scrapes = 1000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--cgroups") == 0) {
      cgroups = static_cast<unsigned>(std::strtoul(argv[i + 1], nullptr, 10));
    }
    if (std::strcmp(argv[i], "--scrapes") == 0) scrapes = std::strtoul(argv[i + 1], nullptr, 10);
  }
  log::set_level(LogLevel::warn);
  const auto hierarchy = cgroup::read_perf_event_hierarchy("/proc", "/sys");
  if (hierarchy.kind == cgroup::PerfEventHierarchy::Kind::none) {
    std::fprintf(stderr, "hwperf_bench_cgroup: %s\n", hierarchy.message.c_str());
    return 1;
  }
  const std::string name = "hwperf-bench-" + std::to_string(::getpid());
  const std::string root = hierarchy.mount_point + "/" + name;
  if (::mkdir(root.c_str(), 0755) != 0) {
    std::perror(("hwperf_bench_cgroup: mkdir " + root + " (run as root)").c_str());
    return 1;
  }
  std::vector<std::string> leaves;
  for (unsigned i = 0; i < cgroups; ++i) {
    char leaf[16];
    std::snprintf(leaf, sizeof leaf, "/c%04u", i);
    leaves.push_back(root + leaf);
    ::mkdir(leaves.back().c_str(), 0755);
  }
  const Topology topology = Topology::load(TopologyConfig{});
  Config config;
  config.get<CgroupCollectorConfig>().enabled = true;
  config.get<CgroupCollectorConfig>().events_given = true;
  for (const char* event : {"perf::CPU-CLOCK", "perf::CONTEXT-SWITCHES", "perf::PAGE-FAULTS"}) {
    EventSpec configured;
    configured.event = event;
    config.get<CgroupCollectorConfig>().events.push_back(configured);
  }
  config.get<CgroupCollectorConfig>().roots.push_back({name, {}});
  config.get<CgroupCollectorConfig>().max_cgroups = cgroups;
  config.get<CgroupCollectorConfig>().rescan_interval_seconds = kMaxRescanIntervalSeconds;

  const bool v2 = hierarchy.kind == cgroup::PerfEventHierarchy::Kind::v2;
  const double alone_ns = ping_pong_ns(hierarchy.mount_point, v2, leaves.front(), 20000);
  const long rss_before = resident_set_kib();
  const std::int64_t first_start = thread_cpu_ns();
  auto collector = cgroup::make_cgroup_collector(config, topology, papi::preset_catalog());
  const std::int64_t first_rescan = thread_cpu_ns() - first_start;

  const std::string counters = std::to_string(cgroups) + " cgroups x " +
                               std::to_string(topology.threads().size()) + " CPUs x 3 events";
  std::printf("%-62s %8s %10s %10s\n", "case (microseconds of thread CPU)", "samples", "p50",
              "p99");
  std::vector<std::int64_t> scrape_cpu, scrape_wall;
  for (std::size_t i = 0; i < scrapes; ++i) {
    const std::int64_t cpu_start = thread_cpu_ns();
    const std::int64_t wall_start = wall_ns();
    std::vector<prometheus::MetricFamily> families;
    collector->collect(families);
    const std::string body = serialize(families, ExpositionFormat::text_0_0_4);
    scrape_cpu.push_back(thread_cpu_ns() - cpu_start);
    scrape_wall.push_back(wall_ns() - wall_start);
  }
  report("scrape, collect + text: " + counters, scrape_cpu);
  report("  the same, wall time", scrape_wall);
  std::vector<std::int64_t> rescan_cpu;
  for (int i = 0; i < 50; ++i) {
    const std::int64_t start = thread_cpu_ns();
    collector->rescan();
    rescan_cpu.push_back(thread_cpu_ns() - start);
  }
  report("rescan, nothing changed (" + std::to_string(cgroups) + " leaves)", rescan_cpu);
  std::printf("first rescan (opens every counter): %.1f ms of CPU\n",
              static_cast<double>(first_rescan) / 1e6);
  const double interval = Config{}.get<CgroupCollectorConfig>().rescan_interval_seconds;
  std::printf("discovery every %.0f s (the default): %.3f %% of a core\n", interval,
              static_cast<double>(percentile(rescan_cpu, 0.5)) / 1e9 / interval * 100.0);
  std::printf("resident set: %ld KiB (before the collector: %ld KiB)\n", resident_set_kib(),
              rss_before);
  const double monitored_ns = ping_pong_ns(hierarchy.mount_point, v2, leaves.front(), 20000);
  std::printf("pipe ping-pong round trip in a monitored cgroup: %.1f us (%.1f us unmonitored)\n",
              monitored_ns / 1e3, alone_ns / 1e3);

  collector.reset();
  for (const auto& leaf : leaves) ::rmdir(leaf.c_str());
  ::rmdir(root.c_str());
  return 0;
}
