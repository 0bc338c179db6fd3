// What the BPF engine's maps hold, as C++ values: a batch of per-CPU entries decoded into
// per-cgroup readings, and when a removed cgroup's entry may be deleted. Pure (no BPF calls), so
// that the unit tests drive them with buffers laid out as the kernel lays them out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_set>
#include <vector>

#include "collectors/perf/perf_event.h"

namespace hwperf::perf::bpf {

// A cgroup's counts since its entry was made: one reading per event and CPU, each the sum of what
// the counter advanced while the cgroup's tasks ran on that CPU (its enabled and running times
// too, so that a multiplexed count scales as perf scales a cgroup event's).
struct CgroupCounts {
  std::uint64_t id = 0;  // the cgroup's id: cgroup_id() of its directory
  // The cgroup was removed: these are its final counts. Returned by the read after its removal
  // and the next one, then deleted (RemovalGrace).
  bool removed = false;
  std::vector<Reading> values;  // [event * cpus + the CPU's index in the engine's CPU list]
};

// How the kernel lays out one entry of a per-CPU map for a read from user space: one value per
// possible CPU (cpu_slots), each rounded up to 8 bytes.
struct ValueShape {
  std::size_t events = 0;
  std::size_t cpu_slots = 0;       // libbpf_num_possible_cpus()
  std::vector<unsigned> cpus;      // the CPUs counted, as the engine was given them
  std::size_t value_size() const;  // hwperf_bpf_counts_size(events)
  std::size_t stride() const;      // value_size() rounded up to 8
  std::size_t entry_bytes() const { return stride() * cpu_slots; }
};

// Appends one CgroupCounts per key: `values` holds entries * shape.entry_bytes() bytes as
// bpf_map_lookup_batch returns them; `removed` when any CPU's copy is flagged.
void decode_counts(const std::uint64_t* keys, const unsigned char* values, std::size_t entries,
                   const ValueShape& shape, std::vector<CgroupCounts>& out);

// One kernel group's readings on one CPU (the leader's times, each member's count), which
// perf::delta_between scales: the group's events are first_event .. first_event + members - 1,
// `cpu_index` a CPU's index among the `cpus` counted.
GroupReading group_reading(const CgroupCounts& counts, std::size_t first_event, std::size_t members,
                           std::size_t cpus, std::size_t cpu_index);

// When the entry of a removed cgroup is deleted: not at the first read that sees it flagged, but
// at the next one, so that its counts reach a reader at least twice (a scrape in between never
// misses them), and so that the last switch of a task that exited just before the rmdir (the
// kernel lets a cgroup be removed once its last task has left it, which it does before that
// task's final switch) lands in the entry rather than making a new one nobody would delete.
class RemovalGrace {
 public:
  // `removed_now`: the ids flagged removed in this read. Returns those to delete now (flagged at
  // the previous read too); remembers the others for the next read.
  std::vector<std::uint64_t> due(const std::vector<std::uint64_t>& removed_now);
  std::size_t waiting() const { return seen_.size(); }

 private:
  std::unordered_set<std::uint64_t> seen_;
};

}  // namespace hwperf::perf::bpf
