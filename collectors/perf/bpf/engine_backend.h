// The BPF engine as a counting backend (issue 38): a cgroup target's units counted by one
// CgroupEngine, so that the counter set, its scaling and everything above it are those of perf
// mode. Each unit of the layout is one engine group; opening a unit for a cgroup on a CPU tracks
// the cgroup (its v2 id, the directory's kernfs id) and reads, from then on, the group's readings
// on that CPU in the cgroup's subtree sum (as a perf_event cgroup event counts: its tasks and its
// descendants'), shaped as a kernel group's reading (group_reading: the leader's times, each
// member's count). The last unit of a cgroup to close forgets it.
//
// The engine is read once per scrape without a hook above the counter set: a unit that asks for a
// reading it has had already gets a fresh engine read, which the units asking after it share
// (ReadingGenerations). In a scrape every unit asks once, so the first asks for a fresh reading
// and the others take it, whatever the number of counter sets the units are spread over (the
// container collector has one per cgroup, where a hook in CounterSet::read would read the engine
// once per cgroup).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "collectors/perf/bpf/cgroup_engine.h"
#include "collectors/perf/counter_set.h"

namespace hwperf::perf::bpf {

// BPF descriptors an engine holds (cgroup_engine.h: eight maps, three programs, the object's BTF,
// the sched_switch and rmdir attachments).
inline constexpr std::size_t kEngineBpfDescriptors = 14;

// A unit's reading in an engine reading: the group starting at `first_event` with `members`
// events, on the CPU at `cpu_index` of `cpus`, in the subtree sum of the tracked cgroup `id`;
// nothing when the reading has no sum for it (tracked after the read). `reading.subtree` is sorted
// by id, as CgroupEngine::read returns it.
std::optional<GroupReading> subtree_group_reading(const EngineReading& reading, std::uint64_t id,
                                                  std::size_t first_event, std::size_t members,
                                                  std::size_t cpus, std::size_t cpu_index);

// EngineReading::unattributed and missed_switches as the counting layer's Unattributed, summed
// reading by reading: each counter's advance since the previous reading, scaled by its running
// share over that advance (enabled / running) where the kernel multiplexed it. A counter: one
// lifetime share applied to the lifetime count would make it go back when the share changes.
class UnattributedTotals {
 public:
  void add(const EngineReading& reading);
  // In the shape of the last reading added (nothing before the first).
  const CountingBackend::Unattributed& totals() const { return totals_; }

 private:
  std::vector<Reading> last_;
  CountingBackend::Unattributed totals_;
};

// Which engine reading a unit gets: a fresh one when it has had the current one already.
class ReadingGenerations {
 public:
  // What a unit opened now has had: no reading made after its cgroup was tracked, so its first
  // read makes one unless another unit's has meanwhile.
  std::uint64_t opened() const { return current_; }
  // Whether a unit that last had generation `had` needs a fresh reading: it has had the current.
  bool needs_fresh(std::uint64_t had) const { return had >= current_; }
  void made() { ++current_; }
  std::uint64_t current() const { return current_; }

 private:
  std::uint64_t current_ = 0;
};

class EngineBackend final : public CountingBackend {
 public:
  // Opens the engine for `layout`: each unit one group, on the layout's CPUs. Throws as
  // CgroupEngine::open does (what is missing, with its remedy).
  EngineBackend(std::shared_ptr<const CounterLayout> layout, EngineOptions options);
  ~EngineBackend() override;

  OrErrno<std::unique_ptr<OpenUnit>> open(const std::vector<EventEncoding>& events,
                                          const CountingTarget& target, int cpu) const override;
  // The engine's: (events + 1) x CPUs perf events and kEngineBpfDescriptors.
  std::size_t shared_descriptors() const override;
  // What crossed a cgroup switch the program did not run at, as of the engine's last reading
  // (UnattributedTotals).
  std::optional<Unattributed> unattributed() const override;
  // The engine's counters on `cpus` opened anew (CgroupEngine::reopen_cpu); the units read the
  // same sums as before, so none is reopened.
  bool reopen_shared(const std::vector<int>& cpus) const override;

  struct Shared;  // the engine, its last reading and the tracked cgroups; units hold it too

 private:
  std::shared_ptr<const CounterLayout> layout_;
  std::shared_ptr<Shared> shared_;
};

}  // namespace hwperf::perf::bpf
