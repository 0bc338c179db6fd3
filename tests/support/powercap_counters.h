// What both powercap test files use: the source over a fixture tree, the counter a source serves
// for one zone, and a counter's (domain, package, die) to compare sets of them.
#pragma once

#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "collectors/rapl/energy_source.h"
#include "collectors/rapl/powercap_source.h"
#include "tests/support/support.h"
#include "tests/support/rapl_fixtures.h"

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

// The powercap source over the tree written under `dir`, on the two-package machine, every domain
// asked for.
inline rapl::ProbeResult open_tree(const TempDir& dir) {
  return rapl::open_powercap_source((dir.path() / "sys").string(),
                                    rapl_fixture::two_package_topology(), rapl::DomainSet::all());
}

// Zones that differ only in their directory and name (the same range, energies 1, 2, 3, ...): for
// what the names alone decide. `zones` lists them as "directory=name", separated by spaces.
inline std::vector<rapl_fixture::Zone> named_zones(const std::string& zones) {
  const std::uint64_t range = rapl_fixture::range_for_unit(61);
  std::vector<rapl_fixture::Zone> named;
  std::istringstream words(zones);
  for (std::string word; words >> word;) {
    const auto equals = word.find('=');
    named.push_back({word.substr(0, equals), word.substr(equals + 1), named.size() + 1, range, 0});
  }
  return named;
}

// The powercap source over named_zones(zones), written under `dir`.
inline rapl::ProbeResult open_named_zones(const TempDir& dir, const std::string& zones) {
  rapl_fixture::write_powercap_tree(dir, named_zones(zones));
  return open_tree(dir);
}

}  // namespace hwperf::test::powercap_counters
