// hwperf_bench_region: what a hostile program can make the region export cost (issue 36). Prints
// figures, never pass/fail; run as root (it counts other processes and raises descriptor limits).
//   --odd [SECONDS]   a command's segment (the exporter's memfd) whose 4096 slots a forked
//                     program holds odd while three of its threads keep the CPUs busy; the
//                     collector scraped at 10 Hz for SECONDS (20): wall time p50, p99, max
//   --fds [SECONDS]   30 processes holding 20,000 descriptors each and no segment, counted by a
//                     target with regions: true (rescans every 3 s, the default); scraped at
//                     10 Hz for SECONDS (60): wall time p50, p99, max and the share of a CPU
//                     this process used (scrapes and rescans)
//   --memory EXPORTER [SECONDS] [CLIENTS]  the exporter binary serving --experiment.regions --
//                     this program --fill, scraped by CLIENTS (16) connections for SECONDS (60):
//                     its VmRSS at the first scrape, its peak and at the end, the body, and how
//                     many bodies were whole expositions
//   --fill            (--memory's command) fills the segment it is handed: 256 regions of
//                     63-byte names, 4096 slots of distinct threads, all advancing every 100 ms
#include <arpa/inet.h>
#include <fcntl.h>
#include <malloc.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_support.h"
#include "collectors/exposition_text.h"
#include "collectors/papi/papi_presets.h"
#include "collectors/process/process_collector.h"
#include "common/log.h"
#include "common/region_segment_file.h"
#include "tests/support/region_collector_config.h"
#include "topology/topology.h"

namespace hwperf::bench {
namespace {

// The region tests' configuration: perf::TASK-CLOCK and perf::PAGE-FAULTS, one target.
Config regions_config(ProcessTargetConfig target, bool regions) {
  return test::region_config(std::move(target), regions, false);
}

template <typename T>
T* at(unsigned char* base, std::uint64_t offset) {
  return reinterpret_cast<T*>(base + offset);
}

void wait_ready(const hwperf_region_header& header) {
  while (__atomic_load_n(&header.state, __ATOMIC_ACQUIRE) != HWPERF_REGION_STATE_READY) {
    ::usleep(1000);
  }
}

// Scrapes `collector` at 10 Hz for `seconds`; prints wall-time percentiles.
void scrape_for(process::ProcessCollector& collector, double seconds, const char* what) {
  std::vector<std::int64_t> wall;
  const std::int64_t end = wall_ns() + static_cast<std::int64_t>(seconds * 1e9);
  while (wall_ns() < end) {
    const std::int64_t start = wall_ns();
    std::vector<prometheus::MetricFamily> families;
    collector.collect(families);
    wall.push_back(wall_ns() - start);
    const std::int64_t next = start + 100000000;
    if (next > wall_ns()) ::usleep(static_cast<useconds_t>((next - wall_ns()) / 1000));
  }
  const double max = static_cast<double>(*std::max_element(wall.begin(), wall.end())) / 1e6;
  const double p50 = static_cast<double>(percentile(wall, 0.50)) / 1e6;
  const double p99 = static_cast<double>(percentile(wall, 0.99)) / 1e6;
  std::printf("%s: %zu scrapes, wall ms p50 %.2f p99 %.2f max %.2f\n", what, wall.size(), p50, p99,
              max);
}

// The hostile program of --odd: every slot odd, then three threads spinning until killed.
[[noreturn]] void hold_slots_odd(int fd) {
  ::setsid();  // a session of its own, as a program started elsewhere (autogroup)
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  const auto layout = region_segment_layout(1, HWPERF_REGION_MAX_SLOTS);
  UniqueMapping mapping = map_file(fd, layout.size, true);
  unsigned char* base = mapping.writable();
  auto& header = *at<hwperf_region_header>(base, 0);
  wait_ready(header);
  std::strcpy(at<hwperf_region_name>(base, layout.names_offset)->name, "held");
  __atomic_store_n(&header.region_count, 1u, __ATOMIC_RELEASE);
  auto* slots = at<hwperf_region_slot>(base, layout.slots_offset);
  for (std::uint32_t s = 0; s < HWPERF_REGION_MAX_SLOTS; ++s) {
    slots[s].tid = static_cast<std::int32_t>(s + 1);
    __atomic_store_n(&slots[s].seq, 1u, __ATOMIC_RELEASE);
  }
  __atomic_store_n(&header.slot_count, HWPERF_REGION_MAX_SLOTS, __ATOMIC_RELEASE);
  std::vector<std::thread> busy;
  for (int i = 0; i < 3; ++i) {
    busy.emplace_back([] {
      for (volatile std::uint64_t n = 0;; n = n + 1) {
      }
    });
  }
  ::pause();
  ::_exit(0);
}

int odd(double seconds) {
  UniqueFd fd = create_region_segment(1, HWPERF_REGION_MAX_SLOTS);
  const pid_t program = ::fork();
  if (program == 0) hold_slots_odd(fd.get());
  ProcessTargetConfig target;
  target.name = "held";
  target.selector = ProcessTargetConfig::Selector::pid;
  target.pid = 0x3fffffff;  // no process: only the segment is read
  target.regions_fd = fd.get();
  const Topology topology = Topology::load(TopologyConfig{});
  auto collector = process::make_process_collector(regions_config(target, false), topology,
                                                   papi::preset_catalog());
  ::sleep(1);  // the program fills the segment and starts its threads
  scrape_for(*collector, seconds, "4096 slots held odd, 3 busy threads");
  ::kill(program, SIGKILL);
  ::waitpid(program, nullptr, 0);
  return 0;
}

// A process named hwperf-fdhog holding `descriptors` descriptors of /dev/null until killed.
pid_t spawn_descriptor_holder(int descriptors, int ready) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  ::prctl(PR_SET_NAME, "hwperf-fdhog");
  const rlimit limit{static_cast<rlim_t>(descriptors + 64), static_cast<rlim_t>(descriptors + 64)};
  ::setrlimit(RLIMIT_NOFILE, &limit);
  const int null = ::open("/dev/null", O_RDONLY);
  for (int i = 0; i < descriptors; ++i) ::dup(null);
  (void)::write(ready, "x", 1);
  ::pause();
  ::_exit(0);
}

double cpu_seconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

int fds(double seconds) {
  constexpr int kProcesses = 30, kDescriptors = 20000;
  int ready[2];
  if (::pipe(ready) != 0) return 1;
  std::vector<pid_t> holders;
  for (int i = 0; i < kProcesses; ++i)
    holders.push_back(spawn_descriptor_holder(kDescriptors, ready[1]));
  for (int i = 0; i < kProcesses; ++i) {
    char byte;
    if (::read(ready[0], &byte, 1) != 1) return 1;
  }
  ProcessTargetConfig target;
  target.name = "hogs";
  target.selector = ProcessTargetConfig::Selector::match;
  target.comm = "^hwperf-fdhog$";
  const Topology topology = Topology::load(TopologyConfig{});
  const double wall_start = static_cast<double>(wall_ns()) / 1e9;
  const double cpu_start = cpu_seconds();
  auto collector = process::make_process_collector(regions_config(target, true), topology,
                                                   papi::preset_catalog());
  std::printf("collector built (first rescan): %.2f s wall, %.2f s CPU\n",
              static_cast<double>(wall_ns()) / 1e9 - wall_start, cpu_seconds() - cpu_start);
  const double cpu_before = cpu_seconds();
  const double wall_before = static_cast<double>(wall_ns()) / 1e9;
  scrape_for(*collector, seconds, "30 processes x 20,000 descriptors, no segment");
  const double cpu = cpu_seconds() - cpu_before;
  const double wall = static_cast<double>(wall_ns()) / 1e9 - wall_before;
  std::printf("this process: %.2f s CPU in %.1f s: %.1f %% of a CPU\n", cpu, wall,
              100.0 * cpu / wall);
  std::vector<prometheus::MetricFamily> families;
  collector->collect(families);
  for (const auto& family : families) {
    if (family.name != "hwperf_process_processes") continue;
    for (const auto& metric : family.metric) {
      std::printf("processes counted by the target: %.0f\n", metric.gauge.value);
    }
  }
  collector.reset();
  for (const pid_t pid : holders) ::kill(pid, SIGKILL);
  for (const pid_t pid : holders) ::waitpid(pid, nullptr, 0);
  return 0;
}

// What --memory's exporter serves: 256 regions of 63-byte names, 4096 slots of distinct
// threads; each call advances every slot (round 1, 2, ...).
void fill_segment(unsigned char* base, std::uint64_t round) {
  auto& header = *at<hwperf_region_header>(base, 0);
  auto* names = at<hwperf_region_name>(base, header.names_offset);
  auto* slots = at<hwperf_region_slot>(base, header.slots_offset);
  if (round == 1) {
    for (std::uint32_t r = 0; r < header.max_regions; ++r) {
      std::snprintf(names[r].name, sizeof names[r].name, "region-%03u-%s", r,
                    std::string(52, 'x').c_str());  // 63 bytes
      __atomic_store_n(&header.region_count, r + 1, __ATOMIC_RELEASE);
    }
    for (std::uint32_t s = 0; s < header.max_slots; ++s) {
      slots[s].region = s % header.max_regions;
      slots[s].tid = static_cast<std::int32_t>(100000 + s);
      __atomic_store_n(&header.slot_count, s + 1, __ATOMIC_RELEASE);
    }
  }
  for (std::uint32_t s = 0; s < header.max_slots; ++s) {
    __atomic_store_n(&slots[s].seq, static_cast<std::uint32_t>(2 * round - 1), __ATOMIC_RELEASE);
    slots[s].calls = round;
    slots[s].time_ns = round * 1000;
    for (auto& count : slots[s].counts) count = round * 7;
    __atomic_store_n(&slots[s].seq, static_cast<std::uint32_t>(2 * round), __ATOMIC_RELEASE);
  }
}

// --fill: --memory's command, on the segment the exporter hands it.
int fill() {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  const char* text = std::getenv(HWPERF_REGION_FD_ENV);
  if (text == nullptr) return 2;
  const int fd = std::atoi(text);
  struct stat info {};
  if (::fstat(fd, &info) != 0) return 2;
  UniqueMapping mapping = map_file(fd, static_cast<std::size_t>(info.st_size), true);
  wait_ready(*at<hwperf_region_header>(mapping.writable(), 0));
  for (std::uint64_t round = 1;; ++round) {
    fill_segment(mapping.writable(), round);
    ::usleep(100000);
  }
}

// --heap: the heap one scrape of that segment holds at its peak (families and text body), in
// process, with glibc's count of bytes in use.
int heap() {
  UniqueFd fd = create_region_segment();
  ProcessTargetConfig target;
  target.name = "app";
  target.selector = ProcessTargetConfig::Selector::pid;
  target.pid = 0x3fffffff;
  target.regions_fd = fd.get();
  const Topology topology = Topology::load(TopologyConfig{});
  auto collector = process::make_process_collector(regions_config(target, false), topology,
                                                   papi::preset_catalog());
  UniqueMapping mapping = map_file(
      fd.get(), region_segment_layout(HWPERF_REGION_MAX_REGIONS, HWPERF_REGION_MAX_SLOTS).size,
      true);
  for (std::uint64_t round = 1; round <= 3; ++round) {
    fill_segment(mapping.writable(), round);
    const std::size_t before = ::mallinfo2().uordblks;
    std::vector<prometheus::MetricFamily> families;
    collector->collect(families);
    const std::size_t collected = ::mallinfo2().uordblks;
    const std::string body = serialize(families, ExpositionFormat::text_0_0_4);
    const std::size_t serialized = ::mallinfo2().uordblks;
    std::size_t series = 0;
    for (const auto& family : families) series += family.metric.size();
    std::printf(
        "scrape %llu: %zu series, families %.1f MB, text body %.1f MB (%.1f MB "
        "allocated for it)\n",
        static_cast<unsigned long long>(round), series,
        static_cast<double>(collected - before) / 1e6, static_cast<double>(body.size()) / 1e6,
        static_cast<double>(serialized - collected) / 1e6);
  }
  return 0;
}

long resident_kib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return 0;
}

// One GET /metrics on a fresh connection: the body when the status is 200, else "".
std::string get_metrics(unsigned port) {
  UniqueFd sock(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(sock.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) return "";
  const std::string request =
      "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  if (::write(sock.get(), request.data(), request.size()) < 0) return "";
  std::string response;
  char buffer[65536];
  for (ssize_t n; (n = ::read(sock.get(), buffer, sizeof buffer)) > 0;) {
    response.append(buffer, static_cast<std::size_t>(n));
  }
  const auto body = response.find("\r\n\r\n");
  if (response.rfind("HTTP/1.1 200", 0) != 0 || body == std::string::npos) return "";
  return response.substr(body + 4);
}

// A whole text exposition: every line a comment or `name{...} value`, the last one ended.
bool whole_exposition(const std::string& body) {
  if (body.empty() || body.back() != '\n') return false;
  std::istringstream lines(body);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto space = line.rfind(' ');
    if (space == std::string::npos) return false;
    char* end = nullptr;
    std::strtod(line.c_str() + space + 1, &end);
    if (end == line.c_str() + space + 1 || *end != '\0') return false;
  }
  return true;
}

// The exporter serving --experiment.regions -- this program --fill; its port from its log.
pid_t start_exporter(const char* exporter, const char* self, const std::string& log,
                     unsigned& port) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int err = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ::dup2(err, 2);
    ::execl(exporter, exporter, "--web.listen-address=127.0.0.1:0", "--experiment.regions", "--",
            self, "--fill", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  const std::string marker = "Listening on 127.0.0.1:";
  for (int i = 0; i < 3000; ++i) {
    std::ifstream file(log);
    const std::string text((std::istreambuf_iterator<char>(file)),
                           std::istreambuf_iterator<char>());
    if (const auto found = text.find(marker); found != std::string::npos) {
      port = static_cast<unsigned>(std::stoul(text.substr(found + marker.size())));
      return pid;
    }
    ::usleep(10000);
  }
  return -1;
}

int memory(const char* exporter, const char* self, double seconds, int clients) {
  const std::string log = "/tmp/hwperf-bench-region-" + std::to_string(::getpid()) + ".log";
  unsigned port = 0;
  const pid_t pid = start_exporter(exporter, self, log, port);
  if (pid < 0) {
    std::fprintf(stderr, "the exporter did not start listening; see %s\n", log.c_str());
    return 1;
  }
  ::sleep(2);  // the command fills its segment
  const std::string first = get_metrics(port);
  const long at_start = resident_kib(pid);
  std::size_t series = 0;
  for (std::size_t at = first.find("hwperf_region_"); at != std::string::npos;
       at = first.find("\nhwperf_region_", at + 1)) {
    ++series;
  }
  std::atomic<bool> stop{false};
  std::atomic<long> bodies{0}, whole{0};
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&] {
      while (!stop.load()) {
        const std::string body = get_metrics(port);
        ++bodies;
        if (whole_exposition(body)) ++whole;
      }
    });
  }
  long peak = at_start;
  for (int s = 0; s < static_cast<int>(seconds); ++s) {
    ::sleep(1);
    peak = std::max(peak, resident_kib(pid));
  }
  stop = true;
  for (auto& thread : threads) thread.join();
  const long at_end = resident_kib(pid);
  std::printf("body %.1f MB, %zu region series; %d clients x %.0f s: %ld bodies, %ld whole\n",
              static_cast<double>(first.size()) / 1e6, series, clients, seconds, bodies.load(),
              whole.load());
  std::printf("exporter VmRSS: %.1f MB at the first scrape, %.1f MB peak, %.1f MB at the end\n",
              static_cast<double>(at_start) / 1024, static_cast<double>(peak) / 1024,
              static_cast<double>(at_end) / 1024);
  ::kill(pid, SIGTERM);
  ::waitpid(pid, nullptr, 0);
  ::unlink(log.c_str());
  return 0;
}

}  // namespace
}  // namespace hwperf::bench

int main(int argc, char** argv) {
  using namespace hwperf::bench;
  hwperf::log::set_level(hwperf::LogLevel::warn);
  const std::string mode = argc > 1 ? argv[1] : "";
  auto number = [&](int i, double fallback) { return argc > i ? std::atof(argv[i]) : fallback; };
  if (mode == "--fill") return fill();
  if (mode == "--heap") return heap();
  if (mode == "--odd") return odd(number(2, 20));
  if (mode == "--fds") return fds(number(2, 60));
  if (mode == "--memory" && argc > 2) {
    char self[4096] = {};
    if (::readlink("/proc/self/exe", self, sizeof self - 1) <= 0) return 1;
    return memory(argv[2], self, number(3, 60), static_cast<int>(number(4, 16)));
  }
  std::fprintf(stderr,
               "usage: %s --odd [SECONDS] | --fds [SECONDS] | --memory EXPORTER [SECONDS] "
               "[CLIENTS]\n",
               argv[0]);
  return 2;
}
