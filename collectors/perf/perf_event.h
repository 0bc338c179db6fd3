// The one home of the kernel's perf_event interface (perf_event_open(2)): opening counters with
// an owned descriptor, reading them with the times the kernel scaled by, and the arithmetic that
// turns two readings into a count. The RAPL perf source, the process targets and (later) the
// container targets all open their events here.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/files.h"
#include "common/unique_fd.h"

namespace hwperf::perf {

// What perf_event_attr needs to name one event: the PMU type and its config words, from libpfm4
// (pfm_encoder.h) or a sysfs PMU description (pmu_sysfs.h).
struct EventEncoding {
  std::string name;  // as the user wrote it, for messages
  std::uint32_t type = 0;
  std::uint64_t config = 0;
  std::uint64_t config1 = 0;
  std::uint64_t config2 = 0;
  bool exclude_user = false;
  bool exclude_kernel = false;
  bool exclude_hv = false;
};

struct OpenOptions {
  // Threads and processes the counted task creates after the open are counted too, into this
  // descriptor (the kernel folds an exited child's count into its parent event).
  bool inherit = false;
  // Created disabled and enabled by the kernel when the task calls exec: what `perf stat CMD`
  // does so that nothing before the command's first instruction is counted.
  bool enable_on_exec = false;
  // `pid` is a descriptor of a cgroup directory (PERF_FLAG_PID_CGROUP): the event counts the
  // tasks of that cgroup and its descendants while they run on `cpu`, which must be a CPU.
  bool cgroup = false;
};

// pid -1 with a CPU: everything on that CPU (system-wide); a pid (a thread id) with cpu -1: that
// thread wherever it runs; both: that thread while on that CPU. Errno on failure.
OrErrno<UniqueFd> open_counter(const EventEncoding& event, pid_t pid, int cpu,
                               const OpenOptions& options = {});

// A count and the two times the kernel keeps for it (PERF_FORMAT_TOTAL_TIME_ENABLED/RUNNING):
// how long the event was enabled, and how long it was really on a counter. They differ when the
// kernel multiplexed the event with others.
struct Reading {
  std::uint64_t value = 0;
  std::uint64_t enabled_ns = 0;
  std::uint64_t running_ns = 0;
};

// One read(2) of a descriptor opened by open_counter.
OrErrno<Reading> read_counter(const UniqueFd& fd);

// The count between two readings of one descriptor, scaled by that interval's own running share
// (delta enabled / delta running), never by the lifetime share: a ratio that changes mid-run (a
// profiler comes and goes) gives the rate the current ratio implies. Computed in 128 bits, so it
// cannot overflow; no reset is ever needed.
struct Delta {
  std::uint64_t count = 0;      // scaled
  std::uint64_t raw_count = 0;  // as counted
  std::uint64_t enabled_ns = 0;
  std::uint64_t running_ns = 0;
  bool scaled = false;       // the kernel multiplexed the event in this interval
  bool not_counted = false;  // enabled but never on a counter in this interval: count is 0
};
Delta delta_between(const Reading& previous, const Reading& current);

// A kernel event group (perf_event_open(2), group_fd): the first event leads, the others are
// members, and the kernel puts them on the counters together or not at all, so their counts
// cover the same time; when the PMU multiplexes, it rotates the whole group. One read(2) of the
// leader with PERF_FORMAT_GROUP returns every count and the group's two times. A group is
// opened whole or not at all.
struct GroupReading {
  std::uint64_t enabled_ns = 0;
  std::uint64_t running_ns = 0;
  std::vector<std::uint64_t> values;  // one per event, in the order they were opened
};

class CounterGroup {
 public:
  CounterGroup() = default;
  // errno of the first event that could not be opened (EINVAL for a member, where the others
  // opened: the group cannot be on the PMU's counters at once).
  static OrErrno<CounterGroup> open(const std::vector<EventEncoding>& events, pid_t pid, int cpu,
                                    const OpenOptions& options = {});
  // One read(2) of the whole group.
  OrErrno<GroupReading> read() const;
  std::size_t size() const { return fds_.size(); }
  bool valid() const { return !fds_.empty(); }
  // The descriptor of event `i`, the leader first (the BPF engine hands each to its program).
  int descriptor(std::size_t i) const { return fds_.at(i).get(); }
  // Where it failed, the index of the event the kernel refused (open's errno is returned).
  std::size_t failed_event() const { return failed_event_; }

 private:
  std::vector<UniqueFd> fds_;  // the leader first
  std::size_t failed_event_ = 0;
};

// The counts of a group between two readings, every one scaled by the group's one running
// share of that interval (delta_between's arithmetic, applied to all members alike).
struct GroupDelta {
  std::vector<std::uint64_t> counts;      // scaled
  std::vector<std::uint64_t> raw_counts;  // as counted
  std::uint64_t enabled_ns = 0;
  std::uint64_t running_ns = 0;
  bool scaled = false;
};
GroupDelta delta_between(const GroupReading& previous, const GroupReading& current);

// kernel.perf_event_paranoid under `procfs`, as read_sysctl reads it (its value, or why it could
// not be read): the one reading every collector's permission messages quote.
std::string paranoid_setting(const std::string& procfs);

// What counting every process on a CPU takes (per-CPU counters, cgroup events, the power, uncore
// and msr PMUs) and how to grant it, with `paranoid` the kernel.perf_event_paranoid read_sysctl
// gave: "needs kernel.perf_event_paranoid <= 0 (it is 2 here) or CAP_PERFMON ...". The one remedy
// every collector's permission error ends with.
std::string system_wide_permission_remedy(const std::string& paranoid);

}  // namespace hwperf::perf
