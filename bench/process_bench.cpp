// hwperf_bench_process: what process targets cost on this machine (prints figures, never
// pass/fail). Needs root or kernel.perf_event_paranoid <= 2 for the software events it counts.
//   1. a scrape of one target of 64 threads x 4 events (perf::TASK-CLOCK, PAGE-FAULTS,
//      CONTEXT-SWITCHES, CPU-MIGRATIONS), through the collector as a scrape calls it: thread CPU
//      time per scrape, p50 and p99;
//   2. a rescan of /proc with 1,000 more processes on the machine (sleeping children of this
//      one), as the background thread does it every rescan interval: CPU time per rescan, and the
//      share of a core that is at the default interval.
//   hwperf_bench_process [--scrapes N] [--processes N]
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_support.h"
#include "collectors/papi/papi_presets.h"
#include "collectors/process/process_collector.h"
#include "common/log.h"
#include "topology/topology.h"

namespace hwperf::bench {
namespace {

// A child with `threads` threads that block until it is killed.
pid_t spawn_idle_threads(unsigned threads) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  std::mutex mutex;
  std::condition_variable never;
  std::vector<std::thread> pool;
  for (unsigned i = 1; i < threads; ++i) {
    pool.emplace_back([&] {
      std::unique_lock lock(mutex);
      never.wait(lock, [] { return false; });
    });
  }
  ::pause();
  ::_exit(0);
}

Config config_for(pid_t pid) {
  Config config;
  config.get<ProcessCollectorConfig>().events_given = true;
  for (const char* name : {"perf::TASK-CLOCK", "perf::PAGE-FAULTS", "perf::CONTEXT-SWITCHES",
                           "perf::CPU-MIGRATIONS"}) {
    EventSpec event;
    event.event = name;
    config.get<ProcessCollectorConfig>().events.push_back(event);
  }
  ProcessTargetConfig target;
  target.name = "bench";
  target.selector = ProcessTargetConfig::Selector::pid;
  target.pid = pid;
  config.get<ProcessCollectorConfig>().targets.push_back(target);
  // Rescans run when this benchmark says, not in the background.
  config.get<ProcessCollectorConfig>().rescan_interval_seconds = kMaxRescanIntervalSeconds;
  return config;
}

void report(const char* what, std::vector<std::int64_t>& samples) {
  const auto p50 = percentile(samples, 0.50);
  const auto p99 = percentile(samples, 0.99);
  std::printf("%-58s %8zu %10.1f %10.1f\n", what, samples.size(), static_cast<double>(p50) / 1e3,
              static_cast<double>(p99) / 1e3);
}

}  // namespace
}  // namespace hwperf::bench

int main(int argc, char** argv) {
  using namespace hwperf;
  using namespace hwperf::bench;
  std::size_t scrapes = 2000;
  unsigned processes = 1000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--scrapes") == 0) scrapes = std::strtoul(argv[i + 1], nullptr, 10);
    if (std::strcmp(argv[i], "--processes") == 0) {
      processes = static_cast<unsigned>(std::strtoul(argv[i + 1], nullptr, 10));
    }
  }
  log::set_level(LogLevel::warn);
  const pid_t target = spawn_idle_threads(64);
  ::usleep(200000);  // the threads start
  const Topology topology = Topology::load(TopologyConfig{});
  auto collector =
      process::make_process_collector(config_for(target), topology, papi::preset_catalog());

  std::printf("%-58s %8s %10s %10s\n", "case (microseconds of thread CPU)", "samples", "p50",
              "p99");
  std::vector<std::int64_t> scrape_cpu, scrape_wall;
  for (std::size_t i = 0; i < scrapes; ++i) {
    std::vector<prometheus::MetricFamily> families;
    const std::int64_t cpu_start = thread_cpu_ns();
    const std::int64_t wall_start = wall_ns();
    collector->collect(families);
    scrape_cpu.push_back(thread_cpu_ns() - cpu_start);
    scrape_wall.push_back(wall_ns() - wall_start);
  }
  report("scrape: 1 target, 64 threads x 4 events (256 counters)", scrape_cpu);
  report("  the same, wall time", scrape_wall);

  std::vector<pid_t> sleepers;
  for (unsigned i = 0; i < processes; ++i) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::pause();
      ::_exit(0);
    }
    if (pid > 0) sleepers.push_back(pid);
  }
  std::vector<std::int64_t> rescan_cpu;
  for (int i = 0; i < 20; ++i) {
    const std::int64_t start = thread_cpu_ns();
    collector->rescan();
    rescan_cpu.push_back(thread_cpu_ns() - start);
  }
  const std::string label =
      "rescan of /proc with " + std::to_string(sleepers.size()) + " extra processes";
  std::vector<std::int64_t> copy = rescan_cpu;
  report(label.c_str(), rescan_cpu);
  const double p50_seconds = static_cast<double>(percentile(copy, 0.5)) / 1e9;
  const double interval = Config{}.get<ProcessCollectorConfig>().rescan_interval_seconds;
  std::printf("rescan every %.0f s (the default): %.3f %% of a core\n", interval,
              p50_seconds / interval * 100.0);
  for (const pid_t pid : sleepers) ::kill(pid, SIGKILL);
  for (const pid_t pid : sleepers) ::waitpid(pid, nullptr, 0);
  collector.reset();
  ::kill(target, SIGKILL);
  ::waitpid(target, nullptr, 0);
  return 0;
}
