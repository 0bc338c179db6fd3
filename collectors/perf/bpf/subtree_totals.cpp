#include "collectors/perf/bpf/subtree_totals.h"

namespace hwperf::perf::bpf {
namespace {

void add_readings(std::vector<Reading>& to, const std::vector<Reading>& from) {
  for (std::size_t i = 0; i < to.size() && i < from.size(); ++i) {
    to[i].value += from[i].value;
    to[i].enabled_ns += from[i].enabled_ns;
    to[i].running_ns += from[i].running_ns;
  }
}

}  // namespace

void SubtreeTotals::track(std::uint64_t id) { retired_.try_emplace(id, values_); }

void SubtreeTotals::forget(std::uint64_t id) { retired_.erase(id); }

template <typename Add>
void SubtreeTotals::each_tracked_ancestor(std::uint64_t id, const Lineages& lineages,
                                          Add add) const {
  const auto found = lineages.find(id);
  if (found == lineages.end() || found->second.empty() || found->second.back() != id) {
    // Unknown, or cut short by the depth the program records: the cgroup itself at least.
    if (tracks(id)) add(id);
    if (found == lineages.end()) return;
  }
  for (const std::uint64_t ancestor : found->second) {
    if (tracks(ancestor)) add(ancestor);
  }
}

std::vector<CgroupCounts> SubtreeTotals::sums(const std::vector<CgroupCounts>& own,
                                              const Lineages& lineages) const {
  std::vector<CgroupCounts> out;
  std::unordered_map<std::uint64_t, std::size_t> index;
  for (const auto& [id, retired] : retired_) {
    index.emplace(id, out.size());
    out.push_back({id, false, retired});
  }
  for (const auto& entry : own) {
    each_tracked_ancestor(entry.id, lineages, [&](std::uint64_t ancestor) {
      add_readings(out[index.at(ancestor)].values, entry.values);
    });
  }
  return out;
}

void SubtreeTotals::retire(const CgroupCounts& entry, const Lineages& lineages) {
  each_tracked_ancestor(entry.id, lineages, [&](std::uint64_t ancestor) {
    add_readings(retired_.at(ancestor), entry.values);
  });
}

}  // namespace hwperf::perf::bpf
