// What cgroups that ran and were removed without ever being counted on their own counted, summed
// under the cgroups they were below (issue 38: a cgroup created and removed between two rescans
// is not dropped). Pure, so that the unit tests drive it with engine readings.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

#include "collectors/perf/bpf/map_values.h"

namespace hwperf::perf::bpf {

class RemovedCgroups {
 public:
  // `values`: readings per cgroup (events x CPUs).
  explicit RemovedCgroups(std::size_t values) : values_(values) {}

  // Sums the removed, never counted descendants of `id` from now on; again, it changes nothing.
  void scope(std::uint64_t id) { sums_.try_emplace(id, values_); }
  void unscope(std::uint64_t id) { sums_.erase(id); }

  // Adds, for every own entry flagged removed whose lineage (EngineReading::lineages) names a
  // scope above it and none of whose lineage `counted` (tracked, now or before: its counts are in
  // a tracked sum or were exported as its own), what it counted since the last read that
  // returned it; an entry without a lineage is placed nowhere. Forgets the entries `own` no
  // longer has.
  void gather(const std::vector<CgroupCounts>& own,
              const std::unordered_map<std::uint64_t, std::vector<std::uint64_t>>& lineages,
              const std::function<bool(std::uint64_t)>& counted);

  // The scope's sum, [event * cpus + CPU index]; null for an id not scoped.
  const std::vector<Reading>* sum(std::uint64_t scope) const;

 private:
  std::size_t values_;
  std::unordered_map<std::uint64_t, std::vector<Reading>> sums_;  // per scope
  std::unordered_map<std::uint64_t, std::vector<Reading>> seen_;  // per removed entry, as added
};

}  // namespace hwperf::perf::bpf
