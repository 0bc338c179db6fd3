// hwperf_bench_groups: what a scrape of event groups costs against the same events read one by
// one (prints figures, never pass/fail). On every CPU, system-wide, 1, 4 and 8 events are opened
// either as one perf::CounterGroup per CPU, read with CounterGroup::read (PERF_FORMAT_GROUP: one
// read(2) per CPU), or one descriptor per event and CPU, read with perf::read_counter (one
// read(2) each). Software events, so that it runs without a hardware PMU (VMs): the kernel reads
// them the same way, and a group of hardware events costs the same read(2)s.
//   - read(2) calls per scrape, counted twice: by a wrapper around read() linked into the
//     benchmark (-Wl,--wrap=read: every call the perf backend makes goes through it), and by the
//     kernel (syscr of /proc/self/io, less what reading that file costs);
//   - thread CPU time per scrape, p50 and p99.
// Needs root or kernel.perf_event_paranoid <= 0 (system-wide counting).
//   hwperf_bench_groups [--scrapes N]
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "bench/bench_support.h"
#include "collectors/perf/perf_event.h"
#include "collectors/perf/pfm_encoder.h"
#include "topology/topology.h"

namespace {
std::uint64_t read_calls = 0;
}

// Every read() of the perf backend, linked with --wrap=read (bench/CMakeLists.txt).
extern "C" ssize_t __real_read(int fd, void* buffer, std::size_t size);
extern "C" ssize_t __wrap_read(int fd, void* buffer, std::size_t size) {
  ++read_calls;
  return __real_read(fd, buffer, size);
}

namespace hwperf::bench {
namespace {

// Eight software events a kernel without a PMU counts, in the order the groups take them (libpfm4
// has no name for the alignment and emulation faults, so cgroup switches are the eighth).
const std::vector<std::string> kEvents = {
    "perf::TASK-CLOCK",     "perf::CPU-CLOCK",    "perf::PAGE-FAULTS",  "perf::CONTEXT-SWITCHES",
    "perf::CPU-MIGRATIONS", "perf::MINOR-FAULTS", "perf::MAJOR-FAULTS", "perf::CGROUP-SWITCHES"};

// Read-family system calls this process has made, as the kernel counts them.
std::uint64_t kernel_read_calls() {
  std::ifstream io("/proc/self/io");
  std::string key;
  std::uint64_t value = 0;
  while (io >> key >> value) {
    if (key == "syscr:") return value;
  }
  return 0;
}

struct Result {
  double reads_counted = 0;  // per scrape
  double reads_kernel = 0;
  std::int64_t p50_ns = 0;
  std::int64_t p99_ns = 0;
};

// Scrapes `scrapes` times, each scrape reading everything once, as a collector does.
template <typename Scrape>
Result measure(unsigned scrapes, Scrape&& scrape) {
  // What one look at /proc/self/io costs in read calls, so that it is taken off the kernel's count.
  const std::uint64_t probe_a = kernel_read_calls();
  const std::uint64_t probe_b = kernel_read_calls();
  const std::uint64_t probe_cost = probe_b - probe_a;
  std::vector<std::int64_t> cpu_ns;
  cpu_ns.reserve(scrapes);
  const std::uint64_t counted_before = read_calls;
  const std::uint64_t kernel_before = kernel_read_calls();
  for (unsigned i = 0; i < scrapes; ++i) {
    const std::int64_t start = thread_cpu_ns();
    scrape();
    cpu_ns.push_back(thread_cpu_ns() - start);
  }
  const std::uint64_t kernel_after = kernel_read_calls();
  Result result;
  result.reads_counted = static_cast<double>(read_calls - counted_before) / scrapes;
  result.reads_kernel =
      static_cast<double>(kernel_after - kernel_before - probe_cost) / static_cast<double>(scrapes);
  result.p50_ns = percentile(cpu_ns, 0.50);
  result.p99_ns = percentile(cpu_ns, 0.99);
  return result;
}

// The opened value, or the bench stops naming what it could not open (root is needed).
template <typename T>
T opened_or_exit(OrErrno<T> opened, const std::string& what, unsigned cpu) {
  if (opened.error != 0) {
    std::fprintf(stderr, "cannot open %s on CPU %u: %s\n", what.c_str(), cpu,
                 std::strerror(opened.error));
    std::exit(1);
  }
  return std::move(opened.value);
}

Result grouped(const std::vector<perf::EventEncoding>& events, const std::vector<unsigned>& cpus,
               unsigned scrapes) {
  std::vector<perf::CounterGroup> groups;
  for (unsigned cpu : cpus) {
    groups.push_back(opened_or_exit(perf::CounterGroup::open(events, -1, static_cast<int>(cpu)),
                                    "a group of " + std::to_string(events.size()) + " events",
                                    cpu));
  }
  std::vector<perf::GroupReading> previous(groups.size());
  std::uint64_t sink = 0;
  const auto result = measure(scrapes, [&] {
    for (std::size_t i = 0; i < groups.size(); ++i) {
      auto reading = groups[i].read();
      const auto delta = perf::delta_between(previous[i], reading.value);
      for (const auto count : delta.counts) sink += count;
      previous[i] = std::move(reading.value);
    }
  });
  if (sink == 1) std::puts("");  // keeps the arithmetic from being optimised away
  return result;
}

Result one_by_one(const std::vector<perf::EventEncoding>& events, const std::vector<unsigned>& cpus,
                  unsigned scrapes) {
  std::vector<UniqueFd> fds;
  for (unsigned cpu : cpus) {
    for (const auto& event : events) {
      fds.push_back(
          opened_or_exit(perf::open_counter(event, -1, static_cast<int>(cpu)), event.name, cpu));
    }
  }
  std::vector<perf::Reading> previous(fds.size());
  std::uint64_t sink = 0;
  const auto result = measure(scrapes, [&] {
    for (std::size_t i = 0; i < fds.size(); ++i) {
      const auto reading = perf::read_counter(fds[i]);
      sink += perf::delta_between(previous[i], reading.value).count;
      previous[i] = reading.value;
    }
  });
  if (sink == 1) std::puts("");
  return result;
}

void print_row(std::size_t events, const char* layout, std::size_t cpus, const Result& result) {
  std::printf("%6zu  %-22s %4zu  %14.1f  %14.1f  %10.2f  %10.2f\n", events, layout, cpus,
              result.reads_counted, result.reads_kernel, static_cast<double>(result.p50_ns) / 1e3,
              static_cast<double>(result.p99_ns) / 1e3);
}

}  // namespace
}  // namespace hwperf::bench

int main(int argc, char** argv) {
  using namespace hwperf;
  unsigned scrapes = 2000;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--scrapes" && i + 1 < argc) {
      scrapes = static_cast<unsigned>(std::strtoul(argv[++i], nullptr, 10));
    } else {
      std::fprintf(stderr, "usage: hwperf_bench_groups [--scrapes N]\n");
      return 2;
    }
  }
  if (scrapes == 0) scrapes = 1;
  perf::initialize_pfm();
  const Topology topology = Topology::load(TopologyConfig{});
  const std::vector<unsigned> cpus = topology.cpus();
  std::vector<perf::EventEncoding> all;
  for (const auto& name : bench::kEvents) {
    all.push_back(perf::encode_event(name, CountingDomain::all));
  }
  std::printf("hwperf_bench_groups: %u scrapes, every CPU of %s\n\n", scrapes,
              topology.description().c_str());
  std::printf("%6s  %-22s %4s  %14s  %14s  %10s  %10s\n", "events", "layout", "CPUs",
              "read(2)/scrape", "kernel syscr", "CPU us p50", "CPU us p99");
  for (const std::size_t count : {1, 4, 8}) {
    const std::vector<perf::EventEncoding> events(all.begin(),
                                                  all.begin() + static_cast<long>(count));
    bench::print_row(count, "one group per CPU", cpus.size(),
                     bench::grouped(events, cpus, scrapes));
    bench::print_row(count, "one fd per event, CPU", cpus.size(),
                     bench::one_by_one(events, cpus, scrapes));
  }
  return 0;
}
