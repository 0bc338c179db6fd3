// The BPF counting engine for containers (issue 38): per-cgroup counts from one set of counters
// per CPU, whatever the number of cgroups, in place of one perf descriptor per (cgroup, CPU,
// event).
//
// Each group of events is opened once per CPU without a cgroup (perf_event_open(attr, -1, cpu)),
// as a kernel group. A BPF program (cgroup_counts.bpf.c) runs at the sched_switch tracepoint and,
// when a CPU switches between tasks of different cgroups, gives what every counter advanced since
// its previous run to the cgroup of the task going out, in that cgroup's own entry, made on its
// first switch (with a record of its ancestors). read() first runs the program on each CPU, so that
// the time since the last switch is counted too, and adds up each tracked cgroup's descendants. The
// events of a group are read one after the other in one program run, with interrupts off, so they
// cover the same time and their ratios hold under multiplexing; each reading carries its enabled
// and running times, to scale as perf scales.
//
// Descriptors: (events + 1) x CPUs perf events (the counters and each CPU's cgroup-switches
// event, which counts) and 14 for BPF (eight maps, three programs, the object's BTF, the
// sched_switch and rmdir attachments).
// Kernel memory, allocated when the engine starts: max_cgroups entries of
// hwperf_bpf_counts_size(events) bytes per possible CPU and 136 bytes of ancestry, and
// max_tracked entries of 8 bytes.
//
// Needs CAP_BPF with CAP_PERFMON (or CAP_SYS_ADMIN), the kernel's BTF, the perf_event controller
// on cgroup v2 and Linux 5.13 (the cgroup-switches event); open() says what is missing.
//
// A CPU taken offline loses its events (the kernel detaches CPU-bound events), and they do not
// come back with it: reopen_cpu() opens them anew once it is back. A task moved to another
// cgroup while it runs raises no switch: what it counted since its last switch goes to the
// cgroup it was moved to.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "collectors/perf/bpf/map_values.h"
#include "collectors/perf/perf_event.h"

namespace hwperf::perf::bpf {

struct EngineState;  // engine_state.h

struct EngineOptions {
  // Each inner list is one kernel group per CPU; a lone event is a group of one. At most
  // kMaxEvents events in all.
  std::vector<std::vector<EventEncoding>> groups;
  std::vector<unsigned> cpus;  // the CPUs to count on: those present (Topology)
  // Cgroups counted at once by their own tasks (own counts): every cgroup whose tasks ran since
  // the entries of removed ones were last reclaimed. A switch of a cgroup beyond it is not
  // counted, and EngineReading::not_counted says how many were not.
  std::size_t max_cgroups = 1024;
  std::size_t max_tracked = 1024;  // cgroups counted with their descendants at once (track())
  std::string sysfs = "/sys";      // where the kernel's BTF is
  std::string procfs = "/proc";    // for kernel.perf_event_paranoid in a permission error
  // Tests only: the program runs at every n-th cgroup switch, as if the kernel skipped the others.
  std::uint64_t switch_period = 1;
  // From cgroup::read_perf_event_hierarchy: the engine keys its counts by cgroup v2 ids.
  bool perf_event_on_cgroup_v2 = false;
};

inline constexpr std::size_t kMaxEvents = 24;  // HWPERF_BPF_MAX_EVENTS

// A counter the program could not read on a CPU (bpf_perf_event_read_value failed: its CPU went
// offline, say), or a CPU where the read before a read() could not run (event = kTrigger).
struct ReadFailure {
  static constexpr std::size_t kTrigger = static_cast<std::size_t>(-1);
  unsigned cpu = 0;
  std::size_t event = kTrigger;
  int error = 0;            // errno
  std::uint64_t times = 0;  // since the engine started (1 for a trigger: this read)
};

struct EngineReading {
  // Every cgroup whose tasks ran since its entry was made, counted by its own tasks only.
  std::vector<CgroupCounts> own;
  // Every tracked cgroup, counted by its own tasks and all its descendants' (as a perf_event
  // cgroup event counts): the sum of their own counts, those of removed descendants included;
  // sorted by id.
  std::vector<CgroupCounts> subtree;
  std::vector<ReadFailure> failures;
  // Switches whose cgroup found the own-count map full (max_cgroups), since the engine started:
  // what the counters advanced before them is in `unattributed` too.
  std::uint64_t not_counted = 0;
  // Cgroup switches the program did not run at, since the engine started: the kernel skips a
  // perf_event program while bpf_prog_active is held on the CPU (bpf_overflow_handler in
  // kernel/events/core.c); on the development VM about 2 switches in 100,000 of a ping-pong,
  // for a reason not found. What the counters advanced across a missed switch spans several
  // cgroups and is given to none: it is in `unattributed`, per event and CPU
  // ([event * cpus + the CPU's index]).
  std::uint64_t missed_switches = 0;
  std::vector<Reading> unattributed;
  // Of each own entry flagged removed whose ancestry is known: its ancestors as the program
  // recorded them, the root first, the cgroup itself last (HWPERF_BPF_MAX_LEVELS levels at most).
  std::unordered_map<std::uint64_t, std::vector<std::uint64_t>> lineages;
  // Program runs (cgroup switches and the reads before a read()), since the engine started.
  std::uint64_t runs = 0;
};

class CgroupEngine {
 public:
  // Validates the options, checks what BPF needs (bpf_support.h), loads the program, opens every
  // counter and attaches. Throws std::invalid_argument for options it refuses and
  // std::runtime_error naming what is missing or failed (the event, the CPU, the remedy).
  static CgroupEngine open(const EngineOptions& options);

  CgroupEngine(CgroupEngine&& other) noexcept;
  CgroupEngine& operator=(CgroupEngine&& other) noexcept;
  CgroupEngine(const CgroupEngine&) = delete;
  CgroupEngine& operator=(const CgroupEngine&) = delete;
  ~CgroupEngine() noexcept;

  // Sums the cgroup with its descendants (EngineReading::subtree) from now on: the counts of
  // those whose entries exist, and of every one removed from now on. Tracking it again changes
  // nothing. Returns 0, or E2BIG when max_tracked cgroups are tracked already. The sums cost
  // the program nothing at a switch: they are added up at read().
  int track(std::uint64_t cgroup_id);
  // Stops summing it; tracked again, it starts afresh (a reader sees its sum go back).
  void forget(std::uint64_t cgroup_id);

  // Runs the program on every CPU, then returns every entry. Removed cgroups' entries are
  // returned flagged by two reads, then deleted (RemovalGrace). Reads are serialised. Throws
  // std::runtime_error when a map cannot be read.
  EngineReading read();

  // `cpu` went offline and came back: the kernel detached its counters and its cgroup-switches
  // event, which count nothing more. Opens them anew, the program taking the new counters' first
  // readings as at the start: each cgroup's count goes on from where it stood, what ran on the
  // CPU while it was offline being nothing. Throws std::runtime_error as open() does.
  void reopen_cpu(unsigned cpu);

  // Where an event's readings are: events are numbered across groups in order.
  std::size_t event_count() const;
  std::size_t group_count() const;
  std::size_t first_event_of(std::size_t group) const;
  std::size_t group_size(std::size_t group) const;
  const std::vector<unsigned>& cpus() const;
  // Perf descriptors held: (events + 1) x CPUs.
  std::size_t perf_descriptors() const;

 private:
  explicit CgroupEngine(std::unique_ptr<EngineState> state);
  std::unique_ptr<EngineState> state_;
};

// A group's readings on one CPU as one kernel group reading (the leader's times, each member's
// count), which perf::delta_between scales: `cpu_index` is the CPU's index in cpus().
GroupReading group_reading(const CgroupEngine& engine, const CgroupCounts& counts,
                           std::size_t group, std::size_t cpu_index);

// The cgroup-switches software event of `cpu` (PERF_COUNT_SW_CGROUP_SWITCHES, Linux 5.13),
// enabled: counting only with `program` -1, or with the BPF program `program` attached, which the
// kernel runs at every switch between tasks of different perf_event cgroups (every `period`-th);
// a program returning 0 has no sample written.
OrErrno<UniqueFd> open_switch_event(unsigned cpu, int program, std::uint64_t period = 1);

// The id of the cgroup whose directory is `path` (name_to_handle_at(2); as stat(2)'s inode
// number on 64-bit kernels): the key of its counts. Errno when it is no cgroup v2 directory.
OrErrno<std::uint64_t> cgroup_id(const std::string& path);
// The same for an open descriptor of the cgroup's directory (CountingTarget::cgroup's).
OrErrno<std::uint64_t> cgroup_id_of(int directory);

}  // namespace hwperf::perf::bpf
