// hwperf_bench_bpf_cgroup: what counting containers costs with the BPF engine
// (collectors/perf/bpf) against one perf event per (cgroup, CPU, event), as the cgroup collector
// opens them today. Prints figures, never pass/fail. Run as root: it makes cgroups under the
// cgroup v2 hierarchy perf_event is bound to (and removes them), and loads BPF programs.
//   1. at 256 and 1,024 cgroups: descriptors, memory (this process's resident set; the kernel's:
//      perf_event objects, BPF maps' and programs' memlock), and the time to read everything;
//   2. what a workload pays: a ping-pong over pipes between two processes in two different
//      cgroups, both pinned to one CPU (two cgroup switches per round trip), with nothing, with
//      the per-cgroup perf events and with the BPF engine, at 2, 256 and 1,024 monitored cgroups:
//      the median of several runs, the configurations taking turns;
//   3. where the BPF engine's cost per switch goes: the cgroup-switches event's overflow path (an
//      empty program attached), the program with one and with three counters (its run time as
//      the kernel measures it, BPF_ENABLE_STATS).
//   hwperf_bench_bpf_cgroup [--events 1|2|3] [--runs N] [--round-trips N]
#include <bpf/bpf.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_support.h"
#include "collectors/cgroup/hierarchy.h"
#include "collectors/perf/bpf/cgroup_engine.h"
#include "common/cpu_list.h"
#include "common/open_files.h"

namespace hwperf::bench {
namespace {

namespace fs = std::filesystem;
using perf::EventEncoding;

std::vector<EventEncoding> bench_events(std::size_t count) {
  std::vector<EventEncoding> events = {
      {"cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK},
      {"page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS},
      {"context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES}};
  events.resize(std::min(count, events.size()));
  return events;
}

// `count` cgroups under <v2>/hwperf-bench-bpf-PID, removed when it goes.
class BenchCgroups {
 public:
  BenchCgroups(const fs::path& v2_root, std::size_t count)
      : root_(v2_root / ("hwperf-bench-bpf-" + std::to_string(::getpid()))) {
    ::mkdir(root_.c_str(), 0755);
    for (std::size_t i = 0; i < count; ++i) {
      paths_.push_back(root_ / ("c" + std::to_string(i)));
      if (::mkdir(paths_.back().c_str(), 0755) != 0) std::perror(paths_.back().c_str());
    }
  }
  ~BenchCgroups() {
    for (const auto& path : paths_) ::rmdir(path.c_str());
    ::rmdir(root_.c_str());
  }
  BenchCgroups(const BenchCgroups&) = delete;
  BenchCgroups& operator=(const BenchCgroups&) = delete;
  // The first `count` (the ping-pong's two are the first two).
  std::vector<fs::path> first(std::size_t count) const {
    return {paths_.begin(), paths_.begin() + static_cast<std::ptrdiff_t>(count)};
  }

 private:
  fs::path root_;
  std::vector<fs::path> paths_;
};

// What a configuration holds while it counts; read() reads everything it counts once.
struct Monitor {
  virtual ~Monitor() = default;
  virtual void read() = 0;
};

struct Nothing final : Monitor {
  void read() override {}
};

// One descriptor per (cgroup, CPU, event), as the cgroup collector opens ungrouped events.
class PerCgroupPerf final : public Monitor {
 public:
  PerCgroupPerf(const std::vector<fs::path>& cgroups, const std::vector<unsigned>& cpus,
                const std::vector<EventEncoding>& events) {
    perf::OpenOptions options;
    options.cgroup = true;
    for (const auto& path : cgroups) {
      const UniqueFd directory(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      for (const unsigned cpu : cpus) {
        for (const auto& event : events) {
          auto opened = perf::open_counter(event, directory.get(), static_cast<int>(cpu), options);
          if (!opened.ok()) throw std::runtime_error("perf_event_open of a cgroup event failed");
          fds_.push_back(std::move(opened.value));
        }
      }
    }
  }
  void read() override {
    for (const auto& fd : fds_) perf::read_counter(fd);
  }

 private:
  std::vector<UniqueFd> fds_;
};

class BpfEngine final : public Monitor {
 public:
  BpfEngine(const std::vector<fs::path>& cgroups, const std::vector<unsigned>& cpus,
            const std::vector<EventEncoding>& events)
      : engine_(perf::bpf::CgroupEngine::open(options(cgroups.size(), cpus, events))) {
    for (const auto& path : cgroups) engine_.track(perf::bpf::cgroup_id(path.string()).value);
  }
  void read() override { engine_.read(); }
  const perf::bpf::CgroupEngine& engine() const { return engine_; }

 private:
  static perf::bpf::EngineOptions options(std::size_t cgroups, const std::vector<unsigned>& cpus,
                                          const std::vector<EventEncoding>& events) {
    perf::bpf::EngineOptions options;
    for (const auto& event : events) options.groups.push_back({event});
    options.cpus = cpus;
    options.max_cgroups = std::max<std::size_t>(1024, 2 * cgroups);
    options.max_tracked = std::max<std::size_t>(cgroups, 1);
    options.perf_event_on_cgroup_v2 = true;
    return options;
  }
  perf::bpf::CgroupEngine engine_;
};

// Each CPU's cgroup-switches event with a program that returns at once: the overflow path alone.
class SwitchEventOnly final : public Monitor {
 public:
  explicit SwitchEventOnly(const std::vector<unsigned>& cpus) {
    const bpf_insn return_zero[] = {{BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0},
                                    {BPF_JMP | BPF_EXIT, 0, 0, 0, 0}};
    program_ = UniqueFd(
        bpf_prog_load(BPF_PROG_TYPE_PERF_EVENT, "hwperf_empty", "GPL", return_zero, 2, nullptr));
    if (!program_.valid()) throw std::runtime_error("cannot load the empty program");
    for (const unsigned cpu : cpus) {
      auto opened = perf::bpf::open_switch_event(cpu, program_.get());
      if (!opened.ok()) throw std::runtime_error("cannot open the cgroup-switches event");
      events_.push_back(std::move(opened.value));
    }
  }
  void read() override {}

 private:
  UniqueFd program_;
  std::vector<UniqueFd> events_;
};

// For comparison: a program that returns at once on the sched_switch raw tracepoint, which runs
// at every context switch (not only between cgroups) without the perf overflow path.
class SchedSwitchOnly final : public Monitor {
 public:
  SchedSwitchOnly() {
    const bpf_insn return_zero[] = {{BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0},
                                    {BPF_JMP | BPF_EXIT, 0, 0, 0, 0}};
    program_ = UniqueFd(bpf_prog_load(BPF_PROG_TYPE_RAW_TRACEPOINT, "hwperf_empty_sw", "GPL",
                                      return_zero, 2, nullptr));
    if (!program_.valid()) throw std::runtime_error("cannot load the empty raw tracepoint program");
    link_ = UniqueFd(bpf_raw_tracepoint_open("sched_switch", program_.get()));
    if (!link_.valid()) throw std::runtime_error("cannot attach to the sched_switch tracepoint");
  }
  void read() override {}

 private:
  UniqueFd program_;
  UniqueFd link_;
};

// Sum of the memlock: lines of this process's BPF objects (/proc/self/fdinfo), in KiB.
long bpf_memlock_kib() {
  long bytes = 0;
  for (const auto& entry : fs::directory_iterator("/proc/self/fdinfo")) {
    std::ifstream info(entry.path());
    for (std::string line; std::getline(info, line);) {
      if (line.rfind("memlock:", 0) == 0) bytes += std::stol(line.substr(8));
    }
  }
  return bytes / 1024;
}

// The kernel's size of one perf_event (its slab object, /proc/slabinfo), in bytes.
long perf_event_object_bytes() {
  std::ifstream slabinfo("/proc/slabinfo");
  for (std::string line; std::getline(slabinfo, line);) {
    if (line.rfind("perf_event ", 0) != 0) continue;
    std::istringstream fields(line);
    std::string name;
    long active = 0, total = 0, size = 0;
    fields >> name >> active >> total >> size;
    return size;
  }
  return 0;
}

using MakeMonitor = std::function<std::unique_ptr<Monitor>()>;

// 1. Descriptors, memory and read time of one configuration holding `cgroups` cgroups.
void scale_row(const std::string& name, std::size_t cgroups, const MakeMonitor& make) {
  const unsigned long fds_before = open_file_count();
  const long rss_before = resident_set_kib();
  const long memlock_before = bpf_memlock_kib();
  const std::int64_t open_start = wall_ns();
  auto monitor = make();
  const double open_ms = static_cast<double>(wall_ns() - open_start) / 1e6;
  const unsigned long fds = open_file_count() - fds_before;
  std::vector<std::int64_t> cpu, wall;
  for (int i = 0; i < 200; ++i) {
    const std::int64_t cpu_start = thread_cpu_ns(), wall_start = wall_ns();
    monitor->read();
    cpu.push_back(thread_cpu_ns() - cpu_start);
    wall.push_back(wall_ns() - wall_start);
  }
  const long kernel_kib = name == "perf" ? static_cast<long>(fds) * perf_event_object_bytes() / 1024
                                         : bpf_memlock_kib() - memlock_before;
  std::printf("| %s | %zu | %lu | %ld | %ld | %.0f / %.0f | %.0f / %.0f | %.0f |\n", name.c_str(),
              cgroups, fds, resident_set_kib() - rss_before, kernel_kib,
              static_cast<double>(percentile(cpu, 0.5)) / 1e3,
              static_cast<double>(percentile(cpu, 0.99)) / 1e3,
              static_cast<double>(percentile(wall, 0.5)) / 1e3,
              static_cast<double>(percentile(wall, 0.99)) / 1e3, open_ms);
}

// A child on `cpu` only, under SCHED_FIFO: on a machine shared with other work, their tasks on
// that CPU would otherwise take turns inside the round trips (and add cgroup switches of their
// own). The kernel's real-time throttling leaves the CPU to others 50 ms in every second.
pid_t pinned_child(unsigned cpu, const std::function<int()>& body) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  cpu_set_t only;
  CPU_ZERO(&only);
  CPU_SET(cpu, &only);
  const sched_param priority{1};
  if (::sched_setaffinity(0, sizeof only, &only) != 0) ::_exit(3);
  if (::sched_setscheduler(0, SCHED_FIFO, &priority) != 0) ::_exit(4);
  ::_exit(body());
}

// 2. One ping-pong run: `round_trips` one-byte round trips between a process in `a` and one in
// `b`, both on `cpu`, after 1,000 to warm up; microseconds per round trip.
double ping_pong_us(const fs::path& a, const fs::path& b, unsigned cpu, int round_trips) {
  int there[2], back[2], result[2];
  if (::pipe(there) != 0 || ::pipe(back) != 0 || ::pipe(result) != 0) return 0;
  const pid_t echo = pinned_child(cpu, [&] {
    char byte;
    while (::read(there[0], &byte, 1) == 1 && ::write(back[1], &byte, 1) == 1) {
    }
    return 0;
  });
  const pid_t timer = pinned_child(cpu, [&] {
    char byte = 'x';
    if (::read(result[0], &byte, 1) != 1) return 2;  // placed in its cgroup
    for (int i = 0; i < 1000; ++i) {
      if (::write(there[1], &byte, 1) != 1 || ::read(back[0], &byte, 1) != 1) return 1;
    }
    const std::int64_t start = wall_ns();
    for (int i = 0; i < round_trips; ++i) {
      if (::write(there[1], &byte, 1) != 1 || ::read(back[0], &byte, 1) != 1) return 1;
    }
    const double us = static_cast<double>(wall_ns() - start) / 1e3 / round_trips;
    return ::write(result[1], &us, sizeof us) == sizeof us ? 0 : 1;
  });
  std::ofstream(b / "cgroup.procs") << echo << std::flush;
  std::ofstream(a / "cgroup.procs") << timer << std::flush;
  const char go = 'g';
  double us = 0;
  if (::write(result[1], &go, 1) != 1) us = -1;
  ::waitpid(timer, nullptr, 0);
  if (us == 0 && ::read(result[0], &us, sizeof us) != sizeof us) us = -1;
  for (int fd : {there[0], there[1], back[0], back[1], result[0], result[1]}) ::close(fd);
  ::kill(echo, SIGKILL);
  ::waitpid(echo, nullptr, 0);
  return us;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0 : values[values.size() / 2];
}

struct Settings {
  std::size_t events = 1;
  int runs = 7;
  int round_trips = 20000;
  std::vector<unsigned> cpus;
  unsigned ping_pong_cpu = 0;
};

// Medians of `settings.runs` ping-pong runs per configuration, the configurations taking turns
// within each run so that the machine's drift spreads over all of them.
std::vector<double> ping_pong_medians(const Settings& settings, const BenchCgroups& cgroups,
                                      const std::vector<MakeMonitor>& configurations) {
  const auto pair = cgroups.first(2);
  std::vector<std::vector<double>> runs(configurations.size());
  for (int run = 0; run < settings.runs; ++run) {
    for (std::size_t c = 0; c < configurations.size(); ++c) {
      const auto monitor = configurations[c]();
      runs[c].push_back(
          ping_pong_us(pair[0], pair[1], settings.ping_pong_cpu, settings.round_trips));
    }
  }
  std::vector<double> medians;
  for (const auto& each : runs) medians.push_back(median(each));
  return medians;
}

// The average run time of the newest program named `name` loaded after program id `after`, as the
// kernel measures it while BPF_ENABLE_STATS is held (nanoseconds; 0 when it is not found).
double program_run_ns(std::uint32_t after, const char* name) {
  double ns = 0;
  for (std::uint32_t id = after; bpf_prog_get_next_id(id, &id) == 0;) {
    const UniqueFd fd(bpf_prog_get_fd_by_id(id));
    bpf_prog_info info{};
    std::uint32_t length = sizeof info;
    if (!fd.valid() || bpf_obj_get_info_by_fd(fd.get(), &info, &length) != 0) continue;
    if (std::strncmp(info.name, name, sizeof info.name - 1) == 0 && info.run_cnt > 0) {
      ns = static_cast<double>(info.run_time_ns) / static_cast<double>(info.run_cnt);
    }
  }
  return ns;
}

std::uint32_t newest_program_id() {
  std::uint32_t id = 0;
  while (bpf_prog_get_next_id(id, &id) == 0) {
  }
  return id;
}

// 3. A ping-pong run with the kernel timing `name`'s runs: its nanoseconds per run.
double run_ns_under(const Settings& settings, const BenchCgroups& cgroups, const MakeMonitor& make,
                    const char* name) {
  const std::uint32_t before = newest_program_id();
  const auto monitor = make();
  const UniqueFd stats(bpf_enable_stats(BPF_STATS_RUN_TIME));
  const auto pair = cgroups.first(2);
  ping_pong_us(pair[0], pair[1], settings.ping_pong_cpu, settings.round_trips);
  return program_run_ns(before, name);
}

void scale_table(const Settings& settings, const BenchCgroups& cgroups) {
  const auto events = bench_events(settings.events);
  std::printf(
      "\n| mode | cgroups | descriptors | resident set KiB | kernel KiB | read us CPU p50 / p99 "
      "| read us wall p50 / p99 | open ms |\n|---|---|---|---|---|---|---|---|\n");
  for (const std::size_t n : {std::size_t{256}, std::size_t{1024}}) {
    const auto chosen = cgroups.first(n);
    scale_row("perf", n,
              [&] { return std::make_unique<PerCgroupPerf>(chosen, settings.cpus, events); });
    scale_row("bpf", n, [&] { return std::make_unique<BpfEngine>(chosen, settings.cpus, events); });
  }
}

void ping_pong_table(const Settings& settings, const BenchCgroups& cgroups) {
  const auto events = bench_events(settings.events);
  std::printf(
      "\n| monitored cgroups | off us | perf us | bpf us | perf adds | bpf adds | bpf / perf "
      "|\n|---|---|---|---|---|---|---|\n");
  for (const std::size_t n : {std::size_t{2}, std::size_t{256}, std::size_t{1024}}) {
    const auto chosen = cgroups.first(n);
    const auto m = ping_pong_medians(
        settings, cgroups,
        {[] { return std::make_unique<Nothing>(); },
         [&] { return std::make_unique<PerCgroupPerf>(chosen, settings.cpus, events); },
         [&] { return std::make_unique<BpfEngine>(chosen, settings.cpus, events); }});
    std::printf("| %zu | %.2f | %.2f | %.2f | %+.2f | %+.2f | %.2f |\n", n, m[0], m[1], m[2],
                m[1] - m[0], m[2] - m[0], (m[2] - m[0]) / (m[1] - m[0]));
  }
}

void breakdown_table(const Settings& settings, const BenchCgroups& cgroups) {
  const auto chosen = cgroups.first(256);
  const std::vector<std::pair<std::string, MakeMonitor>> rows = {
      {"nothing", [] { return std::make_unique<Nothing>(); }},
      {"cgroup-switches event, empty program",
       [&] { return std::make_unique<SwitchEventOnly>(settings.cpus); }},
      {"sched_switch raw tracepoint, empty program (every switch)",
       [] { return std::make_unique<SchedSwitchOnly>(); }},
      {"bpf engine, 1 counter",
       [&] { return std::make_unique<BpfEngine>(chosen, settings.cpus, bench_events(1)); }},
      {"bpf engine, 3 counters",
       [&] { return std::make_unique<BpfEngine>(chosen, settings.cpus, bench_events(3)); }}};
  std::vector<MakeMonitor> makes;
  for (const auto& row : rows) makes.push_back(row.second);
  const auto m = ping_pong_medians(settings, cgroups, makes);
  std::printf(
      "\n| 256 cgroups | round trip us | adds us | per switch ns | program ns per run "
      "|\n|---|---|---|---|---|\n");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const char* program = i == 1 ? "hwperf_empty" : i == 2 ? "hwperf_empty_sw" : "on_sched_switch";
    const double run_ns = i == 0 ? 0 : run_ns_under(settings, cgroups, rows[i].second, program);
    std::printf("| %s | %.2f | %+.2f | %+.0f | %.0f |\n", rows[i].first.c_str(), m[i], m[i] - m[0],
                (m[i] - m[0]) * 1e3 / 2, run_ns);
  }
}

}  // namespace
}  // namespace hwperf::bench

int main(int argc, char** argv) {
  using namespace hwperf;
  using namespace hwperf::bench;
  Settings settings;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const unsigned long value = std::strtoul(argv[i + 1], nullptr, 10);
    if (flag == "--events") settings.events = std::clamp<unsigned long>(value, 1, 3);
    if (flag == "--runs") settings.runs = static_cast<int>(std::max<unsigned long>(value, 1));
    if (flag == "--round-trips")
      settings.round_trips = static_cast<int>(std::max<unsigned long>(value, 100));
  }
  const auto hierarchy = cgroup::read_perf_event_hierarchy("/proc", "/sys");
  if (hierarchy.kind != cgroup::PerfEventHierarchy::Kind::v2) {
    std::fprintf(stderr, "hwperf_bench_bpf_cgroup: perf_event is not on cgroup v2 here: %s\n",
                 hierarchy.message.c_str());
    return 1;
  }
  raise_open_file_limit();
  settings.cpus = read_online_cpus("/sys").value_or(std::vector<unsigned>{0});
  settings.ping_pong_cpu = settings.cpus.back();
  try {
    const BenchCgroups cgroups(hierarchy.mount_point, 1024);
    std::printf(
        "%zu event(s) per CPU (%s...), %zu CPUs; ping-pong on CPU %u, %d round trips a run, "
        "median of %d runs\n",
        settings.events, bench_events(settings.events).front().name.c_str(), settings.cpus.size(),
        settings.ping_pong_cpu, settings.round_trips, settings.runs);
    scale_table(settings, cgroups);
    ping_pong_table(settings, cgroups);
    breakdown_table(settings, cgroups);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "hwperf_bench_bpf_cgroup: %s\n", error.what());
    return 1;
  }
  return 0;
}
