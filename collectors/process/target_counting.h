// The open counters of one target and its running totals: one kernel group per (thread, counting
// unit, CPU slot) of every root process, each opened with inherit so that what the thread
// creates later is counted into it. A counting unit is an event group, or an ungrouped event as
// a group of one (perf/counted_events.h: CountingPlan): each is read with one read(2). Totals
// only grow: a root's counters are read one last time before they are closed, and each interval
// is scaled by its group's own multiplexing share (perf_event.h).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "collectors/perf/perf_event.h"
#include "collectors/process/proc_scan.h"

namespace hwperf::process {

struct CountTotals {
  // [count * slots + slot], counts numbered across units (CountingUnit::first): what was
  // counted, scaled where the kernel multiplexed.
  std::vector<std::uint64_t> counts;
  // [unit]: summed over threads and slots, the kernel's enabled and running times.
  std::vector<std::uint64_t> enabled_ns;
  std::vector<std::uint64_t> running_ns;
  std::uint64_t read_errors = 0;
};

class TargetCounting {
 public:
  // `units`: the events of each kernel group, in counting order. `cpus`: the CPU of each slot,
  // or the single slot -1 (a thread wherever it runs). Only the latter is scaled for
  // multiplexing: an event bound to one CPU is enabled while its thread runs on any CPU but
  // counts only on its own, and its times cannot tell the two apart.
  TargetCounting(std::vector<std::vector<perf::EventEncoding>> units, std::vector<int> cpus);

  // Opens every counter of a process's threads, outside the lock scrapes take; errno of the first
  // open that failed (then nothing is kept). A thread that exits meanwhile (ESRCH) is skipped.
  int attach(const ProcessIdentity& process, const std::vector<pid_t>& threads,
             const perf::OpenOptions& options);
  // Reads a root's counters one last time into the totals and closes them.
  void detach(const ProcessIdentity& process);
  // Closes a root's counters without counting what they saw: they were opened on a stranger.
  void discard(const ProcessIdentity& process);
  // Reads every open counter into the totals and returns them.
  CountTotals read();

  std::size_t open_descriptors() const;
  std::size_t slots() const { return cpus_.size(); }
  const std::vector<int>& cpus() const { return cpus_; }

 private:
  struct Counter {
    perf::CounterGroup group;
    perf::GroupReading last;
    std::size_t unit = 0;
    std::size_t slot = 0;
  };
  void fold(std::vector<Counter>& counters);  // under mutex_

  std::vector<std::vector<perf::EventEncoding>> units_;
  std::vector<std::size_t> first_;  // per unit, the number of its first count
  std::vector<int> cpus_;
  bool scale_ = false;
  mutable std::mutex mutex_;
  std::map<ProcessIdentity, std::vector<Counter>> roots_;
  CountTotals totals_;
};

}  // namespace hwperf::process
