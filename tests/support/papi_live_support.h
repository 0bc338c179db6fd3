// Helpers of the tests that count through this machine's real PAPI and kernel (integration/ and
// hardware/): permission checks that fail with the remedy rather than skip, pinned work that
// makes counts happen on a chosen CPU, and scrapes a known time apart.
#pragma once

#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tests/catch.hpp"
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "collectors/papi/papi_collector.h"
#include "collectors/papi/papi_factory.h"
#include "common/cpu_list.h"
#include "tests/support/support.h"
#include "topology/topology.h"

namespace hwperf::test::papi_live {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

inline int perf_event_paranoid() {
  std::ifstream file("/proc/sys/kernel/perf_event_paranoid");
  int value = 3;
  file >> value;
  return value;
}

// System-wide counting needs root/CAP_PERFMON or perf_event_paranoid <= 0. A test that silently
// skipped here would hide a broken CI setup, so it fails with the remedy instead.
inline void require_system_wide_perf() {
  if (!fs::exists("/sys/bus/event_source/devices/software")) {
    FAIL(
        "this kernel has no perf_event software PMU (/sys/bus/event_source/devices/software); "
        "the live PAPI tests need perf_event");
  }
  if (geteuid() != 0 && perf_event_paranoid() > 0) {
    FAIL(
        "the live PAPI tests count every process on each CPU: run them as root, or set "
        "`sysctl kernel.perf_event_paranoid=0` (it is "
        << perf_event_paranoid() << "), or grant CAP_PERFMON");
  }
}

// Whether the kernel exposes a hardware PMU for CPU events (absent in VMs without passthrough).
inline bool has_hardware_pmu() {
  const fs::path devices = "/sys/bus/event_source/devices";
  for (const char* name : {"cpu", "cpu_core", "cpu_atom"}) {
    if (fs::exists(devices / name)) return true;
  }
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(devices, ec)) {
    if (entry.path().filename().string().rfind("armv", 0) == 0) return true;
  }
  return false;
}

inline Topology live_topology() { return Topology::load(TopologyConfig{}); }

inline EventSpec event(const std::string& name, int line = 0) {
  EventSpec e;
  e.event = name;
  e.mark = {"live.yml", line, 7};
  return e;
}

inline PapiCollectorConfig config_for(const std::vector<std::string>& events,
                                      const std::string& cpus) {
  PapiCollectorConfig config;
  if (cpus != "all") config.cpus = {false, parse_cpu_list(cpus), {"live.yml", 3, 9}};
  config.events_given = true;
  int line = 5;
  for (const auto& name : events) config.events.push_back(event(name, line++));
  return config;
}

inline double value_on(const std::vector<Sample>& samples, const std::string& name, unsigned cpu) {
  const auto found = find_samples(samples, name, {{"cpu", std::to_string(cpu)}});
  if (found.size() != 1) FAIL("expected one " << name << " sample for CPU " << cpu);
  return found.front().value;
}

// Pins the calling thread to `cpu`; returns what went wrong ("" when nothing did).
inline std::string pin_this_thread(unsigned cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) {
    return "cannot pin a thread to CPU " + std::to_string(cpu);
  }
  sched_yield();  // let the scheduler move it before the work starts
  return "";
}

// Runs `work` on a thread pinned to `cpu` and returns what went wrong ("" when nothing did).
// Only that thread is pinned: the test process keeps its own affinity, so the tests that run after
// this one are not confined to one CPU.
inline std::string run_pinned(unsigned cpu, const std::function<std::string()>& work) {
  std::string problem;
  std::thread worker([&] {
    problem = pin_this_thread(cpu);
    if (problem.empty()) problem = work();
  });
  worker.join();
  return problem;
}

// Page faults taken on `cpu`: a thread pinned there maps `bytes` of fresh anonymous memory and
// writes one byte per page, in small pages so that each page is one fault. A thread rather than
// a forked `taskset -c 1` child: fork would make this (large, multi-threaded) test process take
// copy-on-write faults on its own CPU, which is noise in what CPU 0 sees.
inline std::size_t fault_pages_on_cpu(unsigned cpu, std::size_t bytes) {
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const std::string problem = run_pinned(cpu, [&]() -> std::string {
    void* memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) return "mmap of " + std::to_string(bytes) + " bytes failed";
    madvise(memory, bytes, MADV_NOHUGEPAGE);
    auto* data = static_cast<volatile unsigned char*>(memory);
    for (std::size_t offset = 0; offset < bytes; offset += page) data[offset] = 1;
    munmap(memory, bytes);
    return "";
  });
  if (!problem.empty()) FAIL(problem);
  return bytes / page;
}

// Runs `iterations` of a loop of a few instructions each on a worker thread pinned to `cpu` and
// returns how long it took.
inline double busy_on_cpu(unsigned cpu, std::uint64_t iterations) {
  double seconds = 0;
  const std::string problem = run_pinned(cpu, [&]() -> std::string {
    const auto start = Clock::now();
    volatile std::uint64_t sink = 0;
    for (std::uint64_t i = 0; i < iterations; ++i) sink = sink + i;
    seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return "";
  });
  if (!problem.empty()) FAIL(problem);
  return seconds;
}

// Two scrapes with a pause between them. The reads happened within [t0, t1] and [t2, t3], so a
// clock counted between them advanced by at least t2 - t1 (shortest) and at most t3 - t0
// (longest) seconds.
struct ScrapesApart {
  std::vector<Sample> first;
  std::vector<Sample> second;
  double shortest = 0;
  double longest = 0;
};

inline ScrapesApart scrape_twice(Collector& collector, std::chrono::milliseconds pause) {
  ScrapesApart result;
  const auto t0 = Clock::now();
  result.first = scrape(collector);
  const auto t1 = Clock::now();
  std::this_thread::sleep_for(pause);
  const auto t2 = Clock::now();
  result.second = scrape(collector);
  const auto t3 = Clock::now();
  result.shortest = std::chrono::duration<double>(t2 - t1).count();
  result.longest = std::chrono::duration<double>(t3 - t0).count();
  return result;
}

// How far `name` on `cpu` advanced from one scrape to the next.
inline double delta_on(const std::vector<Sample>& before, const std::vector<Sample>& after,
                       const std::string& name, unsigned cpu) {
  return value_on(after, name, cpu) - value_on(before, name, cpu);
}

}  // namespace hwperf::test::papi_live
