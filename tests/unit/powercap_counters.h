// Look-ups both powercap test files make: the counter a source serves for one zone, and a
// counter's (domain, package, die) to compare sets of them.
#pragma once

#include <optional>
#include <tuple>

#include "collectors/rapl/energy_source.h"

namespace hwperf::test::powercap_counters {

using Key = std::tuple<rapl::Domain, std::optional<unsigned>, std::optional<unsigned>>;

inline Key key_of(const rapl::CounterInfo& info) { return {info.domain, info.package, info.die}; }

// The counter a source serves for `domain` on that package and die (nullopt: none), or nullptr.
inline const rapl::CounterInfo* find_counter(const rapl::EnergySource& source, rapl::Domain domain,
                                             std::optional<unsigned> package,
                                             std::optional<unsigned> die = std::nullopt) {
  for (const auto& info : source.counters()) {
    if (info.domain == domain && info.package == package && info.die == die) return &info;
  }
  return nullptr;
}

}  // namespace hwperf::test::powercap_counters
