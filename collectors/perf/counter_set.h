// The counting layer: what is open, for which target and on which CPU, its previous readings and
// its totals, in one object every counting collector uses (tools/lib/perf's perf_evsel: the attr,
// the CPU and thread maps, an fd table per (cpu, thread), {val, ena, run} per read and the
// previous counts beside it). A collector says what to count (units: an event group, or an
// ungrouped event as a group of one) and on which CPU slots, opens it for its targets (every
// task on a CPU, a thread with inherit, a cgroup), and reads totals; it keeps no descriptor and
// no previous reading of its own.
//
// Below the set, a CountingBackend opens one unit for one target on one CPU and reads it as the
// kernel's perf_event_open(2) does ({value, enabled, running}, or an errno): the perf backend
// here, or another engine (BPF) that counts the same (unit, CPU, target) its own way, without
// anything above the set changing.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "collectors/perf/perf_event.h"
#include "common/files.h"
#include "common/interface.h"

namespace hwperf::perf {

// What a counter counts for, as perf_event_open(2) names it: `pid` -1 with a CPU is every task
// on that CPU; a thread id is that thread (and, with options.inherit, what it starts); with
// options.cgroup, `pid` is a descriptor of the cgroup's directory, only borrowed while opening.
struct CountingTarget {
  pid_t pid = -1;
  OpenOptions options;
  static CountingTarget every_task() { return {}; }
  static CountingTarget task(pid_t tid, bool inherit, bool enable_on_exec);
  static CountingTarget cgroup(const UniqueFd& directory);
  // The descendants of the cgroup `directory` that ran and were removed without ever being
  // counted as a target of their own (nor below one): a cgroup that came and went between two
  // rescans. Only an engine that sees every cgroup switch counts it (the BPF engine); the perf
  // backend refuses it (EOPNOTSUPP).
  static CountingTarget removed_under(const UniqueFd& directory);
  bool removed_descendants = false;
};

// One unit opened for one target on one CPU: read as a kernel group with PERF_FORMAT_GROUP is
// (both times, then one value per event in the order they were opened), or why it could not be.
class OpenUnit : public Interface {
 public:
  virtual OrErrno<GroupReading> read() = 0;
  // Descriptors (or their equivalent) it holds: the open_counters families count them.
  virtual std::size_t descriptors() const = 0;
};

class CountingBackend : public Interface {
 public:
  // The unit's events, the first leading, counted together for `target` on `cpu` (-1: wherever
  // the task runs); the errno of the first event that could not be opened.
  virtual OrErrno<std::unique_ptr<OpenUnit>> open(const std::vector<EventEncoding>& events,
                                                  const CountingTarget& target, int cpu) const = 0;
  // Descriptors the backend holds for all its units together, which no unit's descriptors()
  // counts (an engine's counters and programs): 0 for perf_event_open, whose units hold their own.
  virtual std::size_t shared_descriptors() const { return 0; }
  // What the backend counted but could give to no target, as of its last read, or nothing for
  // a backend that gives every count to a target (perf_event_open). The BPF engine gives what
  // the counters advanced across a cgroup switch its program did not run at to no cgroup.
  struct Unattributed {
    // [count * slots + slot] as CounterTotals::counts, since the backend opened, each counter
    // scaled by its running share where the kernel multiplexed it.
    std::vector<std::uint64_t> counts;
    std::uint64_t missed_switches = 0;  // the switches missed, since the backend opened
  };
  virtual std::optional<Unattributed> unattributed() const { return std::nullopt; }
  // The CPUs `cpus` went offline and came back. A backend whose counters all units share (an
  // engine's) opens them anew there and returns true: its units go on as they were. false: each
  // unit must be opened anew (CounterSet::reopen), as perf_event_open's, whose units own theirs.
  // Throws std::runtime_error when they cannot be opened.
  virtual bool reopen_shared(const std::vector<int>& /*cpus*/) const { return false; }
};

// perf_event_open(2): each unit one perf::CounterGroup.
const CountingBackend& perf_event_backend();

// What a counter set counts, decided once by its collector and shared by its sets.
struct CounterLayout {
  // The events of each unit, in counting order; the counts of all units are numbered one after
  // the other (unit 0's events, then unit 1's: CountingPlan::units' `first`).
  std::vector<std::vector<EventEncoding>> units;
  // The CPU of each slot, or the single slot -1 (a task wherever it runs).
  std::vector<int> cpus;
  // A CPU can go offline and come back (the collector follows the online CPUs): a slot whose CPU
  // is offline when a target is opened (ENODEV) is left closed until reopen(). Otherwise ENODEV
  // is a failure like any other.
  bool cpus_come_and_go = false;

  std::size_t slots() const { return cpus.size(); }
  std::size_t counts() const;
  // Per unit, the number of its first count.
  std::vector<std::size_t> first_counts() const;
};

// What a counter set has counted since it was made (or a slot was zeroed), its members closed
// since included.
struct CounterTotals {
  // [count * slots + slot]: scaled by each read interval's own running share where the kernel
  // multiplexed, except for a task bound to one CPU: its counter is enabled while the task runs on
  // any CPU but counts only on its own, and its times cannot tell the two apart.
  std::vector<std::uint64_t> counts;
  // [unit * slots + slot]: the kernel's enabled and running times, summed over targets.
  std::vector<std::uint64_t> enabled_ns;
  std::vector<std::uint64_t> running_ns;
  // [unit * slots + slot]: at the last read, the errno of a counter there that could not be read
  // (what it counted meanwhile is added by its next read that succeeds), 0 when every one read.
  std::vector<int> errors;
  std::uint64_t read_errors = 0;  // reads that failed, in all
  std::uint64_t reads = 0;        // reads of a unit (one read(2) each on the perf backend), in all
  std::size_t descriptors = 0;    // held open now
};

class CounterSet {
 public:
  // The targets opened together (one process's threads, one cgroup), closed together.
  using Member = std::uint64_t;
  struct Opening {
    Member member = 0;
    int error = 0;  // 0: opened
    // With partial opens, per [unit * slots + slot], the errno of each counter that could not be
    // opened there: it never counts, the others do. Empty when all opened.
    std::vector<int> refused;
  };

  explicit CounterSet(std::shared_ptr<const CounterLayout> layout,
                      const CountingBackend& backend = perf_event_backend());
  ~CounterSet();
  CounterSet(const CounterSet&) = delete;
  CounterSet& operator=(const CounterSet&) = delete;

  const CounterLayout& layout() const { return *layout_; }

  // Opens every unit on every slot for each of `targets`, outside the lock reads take; the
  // member closes them all. Whole (the default): the errno of the first open that failed, and
  // nothing is kept; a task that ended meanwhile (ESRCH) is skipped, and when every one has,
  // that is the error. `online`: per slot, false for a CPU known to be offline (left closed);
  // empty for all online. With `partial`, what opens counts and what does not is in `refused`.
  Opening open(const std::vector<CountingTarget>& targets, const std::vector<bool>& online = {},
               bool partial = false);
  // Reads the member's counters one last time into the totals and closes them.
  void close(Member member);
  // Closes the member's counters without counting what they saw since the last read (they were
  // opened on a stranger).
  void discard(Member member);
  // New counters on `slots` for a member opened for the one `target`, in place of those it has
  // there (their CPU came back, or a read failed), each counting from its new descriptor's zero;
  // the totals go on from where they stood. Where an open fails, that counter keeps its old
  // descriptor, and the first such failure is returned (error 0: every one was opened).
  // `closed_only`: only the counters left closed (their CPU was offline when the member was
  // opened), those open going on as they are (a backend that reopened what all its units share,
  // CountingBackend::reopen_shared).
  struct Failure {
    int error = 0;
    std::size_t unit = 0;
    std::size_t slot = 0;
  };
  Failure reopen(Member member, const CountingTarget& target, const std::vector<std::size_t>& slots,
                 bool closed_only = false);
  // Zeroes the totals of `slot`, every unit's: the slot counts from here.
  void zero(std::size_t slot);

  // Reads every open counter once into the totals and returns them.
  CounterTotals read();
  // The totals as the last read left them, without reading.
  CounterTotals totals() const;
  std::size_t descriptors() const;

 private:
  struct Counter;
  struct Opened;
  Opened open_target(const CountingTarget& target, const std::vector<bool>& online,
                     bool partial) const;
  void fold(Counter& counter);  // under mutex_

  std::shared_ptr<const CounterLayout> layout_;
  const CountingBackend& backend_;
  std::vector<std::size_t> first_;  // per unit, the number of its first count
  mutable std::mutex mutex_;
  std::map<Member, std::vector<Counter>> members_;
  Member next_member_ = 1;
  CounterTotals totals_;
};

}  // namespace hwperf::perf
