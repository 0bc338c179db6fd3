// A tracked cgroup's counts with its descendants', added up in user space from the own counts of
// every cgroup and the ancestry the program records when it makes a cgroup's entry (a switch then
// costs the program one map lookup, whatever the cgroup's depth). Pure, so the unit tests drive
// it without BPF.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "collectors/perf/bpf/map_values.h"

namespace hwperf::perf::bpf {

// A cgroup's ancestors as the program recorded them: the root first, the cgroup itself last.
using Lineages = std::unordered_map<std::uint64_t, std::vector<std::uint64_t>>;

class SubtreeTotals {
 public:
  // `values`: readings per cgroup (events x CPUs).
  explicit SubtreeTotals(std::size_t values) : values_(values) {}

  // Sums the cgroup with its descendants from now on; again, it changes nothing.
  void track(std::uint64_t id);
  // Drops its sum; tracked again, it starts from its descendants' entries at that time.
  void forget(std::uint64_t id);
  bool tracks(std::uint64_t id) const { return retired_.count(id) != 0; }
  std::size_t size() const { return retired_.size(); }

  // One CgroupCounts per tracked cgroup: its descendants' retired counts, plus the own counts of
  // every entry of `own` whose lineage names it (itself included). An entry whose lineage is not
  // known counts for itself only.
  std::vector<CgroupCounts> sums(const std::vector<CgroupCounts>& own,
                                 const Lineages& lineages) const;
  // An own entry about to be deleted: its counts stay in the sums of its tracked ancestors, so
  // that those never go back.
  void retire(const CgroupCounts& entry, const Lineages& lineages);

 private:
  // Calls `add` with each tracked cgroup among `id`'s lineage, itself included.
  template <typename Add>
  void each_tracked_ancestor(std::uint64_t id, const Lineages& lineages, Add add) const;

  std::size_t values_;
  // Per tracked cgroup, what its removed descendants' entries held when they were deleted.
  std::unordered_map<std::uint64_t, std::vector<Reading>> retired_;
};

}  // namespace hwperf::perf::bpf
