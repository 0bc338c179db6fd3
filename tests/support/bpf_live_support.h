// What the BPF engine's live tests share: the engine opened on this machine's online CPUs with
// events named as perf names them, a cgroup's counts summed over CPUs, cpu.stat's usage, a
// process run briefly in a cgroup, and this process's descriptors by kind. These tests need root
// (CAP_BPF, CAP_PERFMON), the kernel's BTF and perf_event on cgroup v2; without them they fail
// saying which, never skip.
#pragma once

#include "tests/catch.hpp"

#include <fcntl.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "collectors/cgroup/cgroup_config.h"
#include "collectors/perf/bpf/bpf_support.h"
#include "collectors/perf/bpf/cgroup_engine.h"
#include "common/cpu_list.h"
#include "config/config.h"
#include "tests/support/cgroup_live_support.h"

namespace hwperf::test::bpf_live {

namespace fs = std::filesystem;
using perf::EventEncoding;
using perf::bpf::CgroupCounts;
using perf::bpf::CgroupEngine;
using perf::bpf::EngineOptions;
using perf::bpf::EngineReading;

inline EventEncoding cpu_clock() {
  return {"cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK};
}
inline EventEncoding page_faults() {
  return {"page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS};
}
// The msr PMU's tsc, a counter that is not a software event (the PMU's type from sysfs).
inline EventEncoding msr_tsc() {
  std::ifstream type_file("/sys/bus/event_source/devices/msr/type");
  std::uint32_t type = 0;
  type_file >> type;
  INFO("the msr PMU (/sys/bus/event_source/devices/msr/type; modprobe msr)");
  REQUIRE(type != 0);
  return {"msr/tsc/", type, 0};
}

// The container collector counting perf::CPU-CLOCK in every leaf below `root` in `mode`, rescanned
// only when a test asks (rescan()).
inline Config clock_config(const std::string& root, CountingMode mode) {
  Config config;
  auto& cgroup = config.get<CgroupCollectorConfig>();
  cgroup.enabled = true;
  cgroup.events_given = true;
  EventSpec clock;
  clock.event = "perf::CPU-CLOCK";
  cgroup.events.push_back(clock);
  cgroup.roots.push_back({root, {}});
  cgroup.rescan_interval_seconds = 60;
  cgroup.mode = mode;
  return config;
}

// The v2 hierarchy perf_event is bound to, as the cgroup collector finds it.
inline cgroup_live::Hierarchy v2_hierarchy() {
  auto h = cgroup_live::perf_event_hierarchy();
  INFO("the BPF engine needs the perf_event controller on cgroup v2 (found at " << h.root << ")");
  REQUIRE(h.found.kind == cgroup::PerfEventHierarchy::Kind::v2);
  return h;
}

inline EngineOptions options_for(std::vector<std::vector<EventEncoding>> groups) {
  EngineOptions options;
  options.groups = std::move(groups);
  const auto online = read_online_cpus("/sys");
  REQUIRE(online.has_value());
  options.cpus = *online;
  options.perf_event_on_cgroup_v2 = true;
  return options;
}

// Opens the engine, failing the test with what it says is missing (root runs the suite).
inline CgroupEngine open_engine(const EngineOptions& options) {
  const auto missing = perf::bpf::missing_for_bpf(perf::bpf::probe_bpf_facts("/sys", true));
  INFO(perf::bpf::bpf_unavailable_message(missing));
  REQUIRE(missing.empty());
  return CgroupEngine::open(options);
}

inline std::uint64_t id_of(const fs::path& cgroup) {
  const auto id = perf::bpf::cgroup_id(cgroup.string());
  INFO("cgroup id of " << cgroup << ": errno " << id.error);
  REQUIRE(id.ok());
  return id.value;
}

inline const CgroupCounts* find(const std::vector<CgroupCounts>& entries, std::uint64_t id) {
  for (const auto& entry : entries) {
    if (entry.id == id) return &entry;
  }
  return nullptr;
}

// The event's count summed over the engine's CPUs; 0 when the cgroup has no entry.
inline double sum_over_cpus(const CgroupEngine& engine, const std::vector<CgroupCounts>& entries,
                            std::uint64_t id, std::size_t event = 0) {
  const CgroupCounts* counts = find(entries, id);
  if (counts == nullptr) return 0;
  double sum = 0;
  for (std::size_t c = 0; c < engine.cpus().size(); ++c) {
    sum += static_cast<double>(counts->values.at(event * engine.cpus().size() + c).value);
  }
  return sum;
}

// What the engine gave no cgroup, in seconds of its first event (cpu-clock in these tests) over
// every CPU, since it started: the time across cgroup switches the kernel did not run its program
// at (EngineReading::missed_switches).
inline double unattributed_seconds(const EngineReading& reading) {
  double ns = 0;
  for (std::size_t i = 0; i < reading.unattributed.size(); ++i) {
    ns += static_cast<double>(reading.unattributed[i].value);
  }
  return ns / 1e9;
}

// cpu.stat's usage_usec: the CPU time of the cgroup's tasks and its descendants', in seconds.
inline double usage_seconds(const fs::path& cgroup) {
  std::ifstream stat(cgroup / "cpu.stat");
  std::string key;
  std::uint64_t value = 0;
  while (stat >> key >> value) {
    if (key == "usage_usec") return static_cast<double>(value) / 1e6;
  }
  FAIL("no usage_usec in " << (cgroup / "cpu.stat"));
  return 0;
}

// A child that moves itself into `cgroup` and exits; reaped before returning. Made with vfork:
// it borrows this process's memory until it exits, so it costs no copy of the test binary's page
// tables (a fork of the ASan build took 30 ms), and it makes system calls only.
inline void run_briefly_in(const fs::path& cgroup) {
  const std::string procs = (cgroup / "cgroup.procs").string();
  const pid_t child = ::vfork();
  if (child == 0) {
    const int fd = ::open(procs.c_str(), O_WRONLY | O_CLOEXEC);
    ::_exit(fd >= 0 && ::write(fd, "0", 1) == 1 ? 0 : 1);
  }
  REQUIRE(child >= 0);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  INFO("a child moving itself into " << cgroup);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
}

// Two children on `cpu` only, the first in `a` and the second in `b` (each moves itself there),
// passing a byte back and forth over a socket pair `round_trips` times: two cgroup switches a
// round trip. Both are reaped before returning.
inline void ping_pong(const fs::path& a, const fs::path& b, int cpu, int round_trips) {
  int ends[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) == 0);
  const fs::path homes[2] = {a, b};
  pid_t children[2];
  for (int side = 0; side < 2; ++side) {
    children[side] = ::fork();
    REQUIRE(children[side] >= 0);
    if (children[side] != 0) continue;
    cpu_set_t only;
    CPU_ZERO(&only);
    CPU_SET(cpu, &only);
    std::ofstream(homes[side] / "cgroup.procs") << 0 << std::flush;
    if (::sched_setaffinity(0, sizeof only, &only) != 0) ::_exit(3);
    char byte = 0;
    // The first side serves; each side answers what it receives until the last round trip.
    if (side == 0 && ::write(ends[0], &byte, 1) != 1) ::_exit(1);
    for (int i = 0; i < round_trips; ++i) {
      if (::read(ends[side], &byte, 1) != 1) ::_exit(1);
      if ((side == 1 || i + 1 < round_trips) && ::write(ends[side], &byte, 1) != 1) ::_exit(1);
    }
    ::_exit(0);
  }
  ::close(ends[0]);
  ::close(ends[1]);
  for (const pid_t child : children) {
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
  }
}

// This process's descriptors by what they are: "perf_event", "bpf" (maps, programs, links, BTF),
// "other".
inline std::map<std::string, unsigned> descriptor_census() {
  std::map<std::string, unsigned> census;
  for (const auto& entry : fs::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const std::string target = fs::read_symlink(entry.path(), ec).string();
    if (target == "anon_inode:[perf_event]") {
      ++census["perf_event"];
    } else if (target.rfind("anon_inode:bpf", 0) == 0 || target == "anon_inode:btf") {
      ++census["bpf"];
    } else {
      ++census["other"];
    }
  }
  return census;
}

}  // namespace hwperf::test::bpf_live
