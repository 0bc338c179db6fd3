// The powercap source on machines of each vendor and generation: energy through the engine across
// wraps of every zone, AMD and Hygon's core zone, and TPMI zones per package and die.
#include "tests/catch.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "collectors/rapl/powercap_source.h"
#include "collectors/rapl/rapl_engine.h"
#include "tests/support/support.h"
#include "tests/support/powercap_counters.h"
#include "tests/support/rapl_fixtures.h"

using namespace hwperf;
using namespace hwperf::rapl;
using namespace hwperf::test::rapl_fixture;
using hwperf::test::TempDir;
using namespace hwperf::test::powercap_counters;

namespace {

// The next value of a powercap zone after `energy_uj` more: up to the range, then 0 one
// counter unit later (what the kernel shows as the 32-bit register wraps).
std::uint64_t advance(std::uint64_t value, std::uint64_t energy_uj, std::uint64_t range,
                      std::uint64_t unit) {
  std::uint64_t next = value + energy_uj;
  while (next > range) next -= range + unit;
  return next;
}

}  // namespace

TEST_CASE("powercap energy through the engine is exact across wraps of every zone", "[rapl]") {
  TempDir dir;
  const std::uint64_t pkg_unit = 61;
  const std::uint64_t dram_unit = 15;
  auto zones = two_package_zones(pkg_unit, dram_unit);
  // Start some zones just below their range so that the next step wraps them; one exactly at
  // the top (a wrap of one unit comes next), one that will not move (equal readings).
  const std::map<std::string, std::uint64_t> below_top = {
      {"intel-rapl:0", 10 * pkg_unit}, {"intel-rapl:0:2", 3 * dram_unit}, {"intel-rapl:1", 0}};
  for (auto& zone : zones) {
    if (const auto it = below_top.find(zone.dir); it != below_top.end()) {
      zone.energy_uj = zone.range_uj - it->second;
    }
  }
  write_powercap_tree(dir, zones);
  auto probe = open_tree(dir);
  REQUIRE(probe.source != nullptr);
  const std::vector<CounterInfo> infos = probe.source->counters();

  auto now = Clock::time_point{} + std::chrono::hours(1);
  RaplEngine engine(std::move(probe.source), std::vector<double>(infos.size(), 1000.0),
                    [&now] { return now; });

  // Energy per zone per step, in uJ: a wrap of one unit, a plain step, equal readings.
  const std::map<std::string, std::vector<std::uint64_t>> steps = {
      {"intel-rapl:0", {25 * pkg_unit, 400000, 0}},
      {"intel-rapl:0:0", {123457, 0, 99}},
      {"intel-rapl:0:1", {0, 0, 0}},
      {"intel-rapl:0:2", {3 * dram_unit, dram_unit, 7777777}},
      {"intel-rapl:1", {pkg_unit, 1, 2}},
      {"intel-rapl:1:0", {10, 20, 30}},
      {"intel-rapl:1:1", {1000000, 2000000, 3000000}},
      {"intel-rapl:1:2", {5, 0, 5}},
      {"intel-rapl:2", {999999, 1, 0}},
  };
  std::map<std::string, std::uint64_t> value;
  std::map<std::string, std::uint64_t> truth;
  for (const auto& zone : zones) value[zone.dir] = zone.energy_uj;
  for (std::size_t step = 0; step < 3; ++step) {
    for (const auto& zone : zones) {
      const auto it = steps.find(zone.dir);
      if (it == steps.end()) continue;
      const std::uint64_t unit = zone.name == "dram" ? dram_unit : pkg_unit;
      value[zone.dir] = advance(value[zone.dir], it->second[step], zone.range_uj, unit);
      truth[zone.dir] += it->second[step];
      set_energy(dir, zone.dir, value[zone.dir]);
    }
    now += std::chrono::seconds(1);
    engine.sample();
  }

  const auto series = engine.snapshot();
  CHECK(series.size() == infos.size());
  for (const auto& zone : zones) {
    const auto t = truth.find(zone.dir);
    if (t == truth.end()) continue;
    CAPTURE(zone.dir, zone.name);
    const auto name = parse_zone_name(zone.name).value();
    std::optional<unsigned> package = name.package;
    if (zone.dir.size() > std::string("intel-rapl:0").size()) {
      // A subzone: its package is its parent's.
      const std::string parent = zone.dir.substr(0, zone.dir.rfind(':'));
      for (const auto& z : zones) {
        if (z.dir == parent) package = parse_zone_name(z.name)->package;
      }
    }
    const SeriesSnapshot* found = nullptr;
    for (const auto& s : series) {
      if (s.key == SeriesKey{name.domain, package, std::nullopt}) found = &s;
    }
    REQUIRE(found != nullptr);
    CHECK(found->tally.energy.whole_joules() == t->second / 1000000);
    CHECK(found->tally.energy.remainder_counts() == t->second % 1000000);
    CHECK(found->tally.rejected == 0);
    CHECK(found->tally.read_errors == 0);
  }
  // Wraps: intel-rapl:0 (first step), intel-rapl:0:2 (first step), intel-rapl:1 (first step).
  std::uint64_t wraps = 0;
  for (const auto& s : series) wraps += s.tally.wraps;
  CHECK(wraps == below_top.size());
}

TEST_CASE("powercap on AMD and Hygon leaves out the core zone, which is one core's energy",
          "[rapl]") {
  TempDir dir;
  const auto zones = two_package_zones();
  write_powercap_tree(dir, zones);
  const std::string sysfs = (dir.path() / "sys").string();
  std::size_t core_zones = 0;
  for (const auto& zone : zones) core_zones += zone.name == "core" ? 1 : 0;
  REQUIRE(core_zones > 0);

  // The same tree read for an Intel CPU keeps every core zone.
  const auto intel = open_powercap_source(sysfs, two_package_topology(), DomainSet::all(),
                                          parse_cpuinfo(cpuinfo("GenuineIntel", 6, 143)));
  REQUIRE(intel.source != nullptr);
  const auto count_core = [](const EnergySource& source) {
    return std::count_if(source.counters().begin(), source.counters().end(),
                         [](const CounterInfo& info) { return info.domain == Domain::core; });
  };
  CHECK(static_cast<std::size_t>(count_core(*intel.source)) == core_zones);

  for (const auto& [vendor, family] :
       {std::pair<std::string, unsigned>{"AuthenticAMD", 25}, {"HygonGenuine", 24}}) {
    CAPTURE(vendor);
    const auto amd = open_powercap_source(sysfs, two_package_topology(), DomainSet::all(),
                                          parse_cpuinfo(cpuinfo(vendor, family, 17)));
    REQUIRE(amd.source != nullptr);
    CHECK(count_core(*amd.source) == 0);
    // Everything else is still there.
    CHECK(amd.source->counters().size() == intel.source->counters().size() - core_zones);
  }
}

TEST_CASE(
    "powercap on an AMD EPYC (intel_rapl_msr, family 17h/19h) reads each package and "
    "leaves out its core zone",
    "[rapl]") {
  TempDir dir;
  const auto zones = amd_two_package_zones();
  write_powercap_tree(dir, zones);
  const std::string sysfs = (dir.path() / "sys").string();
  for (const auto& [family, model] : {std::pair<unsigned, unsigned>{0x17, 0x31},  // Rome
                                      {0x19, 0x11}}) {                            // Genoa
    CAPTURE(family, model);
    const auto probe = open_powercap_source(sysfs, two_package_topology(), DomainSet::all(),
                                            parse_cpuinfo(cpuinfo("AuthenticAMD", family, model)));
    REQUIRE(probe.source != nullptr);
    EnergySource& source = *probe.source;
    // One counter per package zone, reading that zone's energy_uj; no core counter at all.
    std::size_t packages = 0;
    for (const auto& zone : zones) {
      if (zone.name == "core") continue;
      ++packages;
      const auto name = parse_zone_name(zone.name).value();
      CAPTURE(zone.dir);
      const CounterInfo* info = find_counter(source, Domain::package, name.package);
      REQUIRE(info != nullptr);
      CHECK(info->scale.range == zone.range_uj);
      const auto index = static_cast<std::size_t>(info - source.counters().data());
      const auto reading = source.read(index);
      CHECK(reading.error == 0);
      CHECK(reading.value == zone.energy_uj);
    }
    CHECK(source.counters().size() == packages);
  }
}

TEST_CASE("powercap reads TPMI zones (Granite Rapids, Sierra Forest) once per package and die",
          "[rapl]") {
  // TPMI gives one package zone per power domain (die) and no perf events. Some kernels name
  // its zones intel-rapl-tpmi:N, mainline intel-rapl:N; here the MSR driver adds psys and a
  // package-0-die-0 zone that repeats TPMI's, which must be read once.
  const std::vector<Zone> zones = named_zones(
      "intel-rapl-tpmi:0=package-0-die-0 intel-rapl-tpmi:0:0=dram "
      "intel-rapl-tpmi:1=package-0-die-1 "
      "intel-rapl-tpmi:2=package-1-die-0 intel-rapl:0=psys intel-rapl:1=package-0-die-0");
  TempDir dir;
  dir.write("sys/class/powercap/intel-rapl-tpmi/enabled", "1\n");
  write_powercap_tree(dir, zones);
  auto probe = open_tree(dir);
  REQUIRE(probe.source != nullptr);
  const EnergySource& source = *probe.source;
  std::set<Key> keys;
  for (const auto& info : source.counters()) keys.insert(key_of(info));
  // Every (domain, package, die) once: the repeated package-0-die-0 is not a second counter.
  std::set<Key> expected;
  for (const auto& zone : zones) {
    auto name = parse_zone_name(zone.name);
    REQUIRE(name.has_value());
    if (zone.dir.find(':', zone.dir.find(':') + 1) != std::string::npos) {
      name->package = 0u;  // the dram subzone belongs to its parent, package 0 die 0
      name->die = 0u;
    }
    expected.insert({name->domain, name->package, name->die});
  }
  CHECK(keys == expected);
  CHECK(source.counters().size() == expected.size());
  // Die 1 exists only through TPMI; die 0 is read once, from the MSR driver's zone, which is
  // preferred where both describe the same package and die.
  const CounterInfo* die1 = find_counter(source, Domain::package, 0u, 1u);
  REQUIRE(die1 != nullptr);
  CHECK_THAT(die1->source, Catch::Contains("intel-rapl-tpmi:1/"));
  const CounterInfo* die0 = find_counter(source, Domain::package, 0u, 0u);
  REQUIRE(die0 != nullptr);
  CHECK_THAT(die0->source, Catch::Contains("intel-rapl:1/"));
  const CounterInfo* dram = find_counter(source, Domain::dram, 0u, 0u);
  REQUIRE(dram != nullptr);
  CHECK_THAT(dram->source, Catch::Contains("intel-rapl-tpmi:0:0/"));
  CHECK(find_counter(source, Domain::psys, std::nullopt, std::nullopt) != nullptr);
}
