#include "topology/topology.h"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>
#include <utility>

namespace hwperf {

std::string Cache::label() const {
  std::string text = "L" + std::to_string(level);
  // Only level 1 is split in practice; a split level-2 cache still gets its suffix so that two
  // caches of one CPU never share a label.
  switch (type) {
    case CacheType::data: text += 'd'; break;
    case CacheType::instruction: text += 'i'; break;
    case CacheType::unified: break;
  }
  return text;
}

Topology::Topology(std::vector<HardwareThread> threads, std::vector<Cache> caches,
                   std::string description, std::optional<CpuIdentity> cpu_identity)
    : threads_(std::move(threads)),
      caches_(std::move(caches)),
      description_(std::move(description)),
      cpu_identity_(std::move(cpu_identity)) {
  std::sort(threads_.begin(), threads_.end(),
            [](const HardwareThread& a, const HardwareThread& b) { return a.cpu < b.cpu; });
  const auto duplicate = std::adjacent_find(
      threads_.begin(), threads_.end(),
      [](const HardwareThread& a, const HardwareThread& b) { return a.cpu == b.cpu; });
  if (duplicate != threads_.end()) {
    throw std::invalid_argument("topology: CPU " + std::to_string(duplicate->cpu) +
                                " is listed twice");
  }

  for (Cache& cache : caches_) {
    std::sort(cache.cpus.begin(), cache.cpus.end());
    cache.cpus.erase(std::unique(cache.cpus.begin(), cache.cpus.end()), cache.cpus.end());
    for (unsigned cpu : cache.cpus) {
      if (find(cpu) == nullptr) {
        throw std::invalid_argument("topology: " + cache.label() + " cache lists CPU " +
                                    std::to_string(cpu) + ", which is not in the topology");
      }
    }
  }
  // A cache that no CPU uses cannot be attributed to anything; dropping it keeps "first cpu"
  // well defined for the ordering below.
  caches_.erase(std::remove_if(caches_.begin(), caches_.end(),
                               [](const Cache& cache) { return cache.cpus.empty(); }),
                caches_.end());
  std::sort(caches_.begin(), caches_.end(), [](const Cache& a, const Cache& b) {
    return std::make_tuple(a.level, a.type, a.cpus.front()) <
           std::make_tuple(b.level, b.type, b.cpus.front());
  });

  // Per-CPU cache metrics are keyed by {cpu, cache label}; two instances with one label over the
  // same CPU would produce duplicate series, so that shape is rejected here rather than at scrape.
  std::set<std::pair<unsigned, std::string>> seen;
  for (const Cache& cache : caches_) {
    const std::string label = cache.label();
    for (unsigned cpu : cache.cpus) {
      if (!seen.emplace(cpu, label).second) {
        throw std::invalid_argument("topology: CPU " + std::to_string(cpu) + " is under two " +
                                    label + " caches");
      }
    }
  }
}

const HardwareThread* Topology::find(unsigned cpu) const {
  const auto it = std::lower_bound(
      threads_.begin(), threads_.end(), cpu,
      [](const HardwareThread& thread, unsigned value) { return thread.cpu < value; });
  if (it == threads_.end() || it->cpu != cpu) return nullptr;
  return &*it;
}

std::vector<unsigned> Topology::cpus() const {
  std::vector<unsigned> result;
  result.reserve(threads_.size());
  for (const HardwareThread& thread : threads_) result.push_back(thread.cpu);
  return result;
}

std::vector<unsigned> Topology::packages() const {
  std::vector<unsigned> result;
  for (const HardwareThread& thread : threads_) result.push_back(thread.package);
  std::sort(result.begin(), result.end());
  result.erase(std::unique(result.begin(), result.end()), result.end());
  return result;
}

std::vector<unsigned> Topology::cpus_of_package(unsigned package) const {
  std::vector<unsigned> result;
  for (const HardwareThread& thread : threads_) {
    if (thread.package == package) result.push_back(thread.cpu);
  }
  return result;  // threads_ is sorted by cpu, so this is too
}

std::vector<CpuTarget> Topology::package_targets(const std::vector<unsigned>& preferred,
                                                 bool per_die) const {
  std::map<std::pair<unsigned, unsigned>, unsigned> by_die;  // (package, die) -> cpu
  auto key_of = [per_die](const HardwareThread& thread) {
    return std::make_pair(thread.package, per_die ? thread.die : 0u);
  };
  for (unsigned cpu : preferred) {
    if (const HardwareThread* thread = find(cpu)) by_die.emplace(key_of(*thread), cpu);
  }
  for (const HardwareThread& thread : threads_) by_die.emplace(key_of(thread), thread.cpu);
  std::map<unsigned, int> dies_per_package;
  for (const auto& entry : by_die) ++dies_per_package[entry.first.first];
  const bool several_dies = std::any_of(dies_per_package.begin(), dies_per_package.end(),
                                        [](const auto& entry) { return entry.second > 1; });
  std::vector<CpuTarget> targets;
  for (const auto& [key, cpu] : by_die) {
    targets.push_back(
        {cpu, key.first, several_dies ? std::optional<unsigned>(key.second) : std::nullopt});
  }
  return targets;
}

std::vector<CpuTarget> Topology::core_targets() const {
  std::set<std::pair<unsigned, unsigned>> seen;  // core ids repeat across packages
  std::vector<CpuTarget> targets;
  for (const HardwareThread& thread : threads_) {
    if (seen.insert({thread.package, thread.core}).second) {
      targets.push_back({thread.cpu, thread.package, std::nullopt});
    }
  }
  return targets;
}

}  // namespace hwperf
