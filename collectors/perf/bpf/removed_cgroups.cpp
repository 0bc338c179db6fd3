#include "collectors/perf/bpf/removed_cgroups.h"

#include <algorithm>
#include <unordered_set>

namespace hwperf::perf::bpf {

void RemovedCgroups::gather(
    const std::vector<CgroupCounts>& own,
    const std::unordered_map<std::uint64_t, std::vector<std::uint64_t>>& lineages,
    const std::function<bool(std::uint64_t)>& counted) {
  std::unordered_set<std::uint64_t> present;
  for (const auto& entry : own) {
    present.insert(entry.id);
    const auto found = lineages.find(entry.id);
    if (!entry.removed || found == lineages.end() || sums_.empty()) continue;
    const std::vector<std::uint64_t>& lineage = found->second;
    if (std::any_of(lineage.begin(), lineage.end(), counted)) continue;
    auto& before = seen_[entry.id];
    before.resize(entry.values.size());
    for (std::size_t level = 0; level + 1 < lineage.size(); ++level) {
      const auto scope = sums_.find(lineage[level]);
      if (scope == sums_.end()) continue;
      for (std::size_t i = 0; i < entry.values.size() && i < scope->second.size(); ++i) {
        scope->second[i].value += entry.values[i].value - before[i].value;
        scope->second[i].enabled_ns += entry.values[i].enabled_ns - before[i].enabled_ns;
        scope->second[i].running_ns += entry.values[i].running_ns - before[i].running_ns;
      }
    }
    before = entry.values;
  }
  for (auto it = seen_.begin(); it != seen_.end();) {
    it = present.count(it->first) != 0 ? std::next(it) : seen_.erase(it);
  }
}

const std::vector<Reading>* RemovedCgroups::sum(std::uint64_t scope) const {
  const auto it = sums_.find(scope);
  return it == sums_.end() ? nullptr : &it->second;
}

}  // namespace hwperf::perf::bpf
