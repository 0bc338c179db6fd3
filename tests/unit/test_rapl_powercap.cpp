// The powercap source against fixture trees: zone discovery (names, not directory indexes,
// give the package), the MMIO duplicate, per-zone ranges, power hints, the failure states a
// user meets (no tree, masked tree, root-only energy_uj), and energy across wraps.
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
#include "tests/support.h"
#include "tests/unit/test_rapl_fixtures.h"

using namespace hwperf;
using namespace hwperf::rapl;
using namespace hwperf::test::rapl_fixture;
using hwperf::test::TempDir;

namespace {

using Key = std::tuple<Domain, std::optional<unsigned>, std::optional<unsigned>>;

Key key_of(const CounterInfo& info) { return {info.domain, info.package, info.die}; }

const CounterInfo* find_counter(const EnergySource& source, Domain domain,
                                std::optional<unsigned> package,
                                std::optional<unsigned> die = std::nullopt) {
  for (const auto& info : source.counters()) {
    if (key_of(info) == Key{domain, package, die}) return &info;
  }
  return nullptr;
}

// The next value of a powercap zone after `energy_uj` more: up to the range, then 0 one
// counter unit later (what the kernel shows as the 32-bit register wraps).
std::uint64_t advance(std::uint64_t value, std::uint64_t energy_uj, std::uint64_t range,
                      std::uint64_t unit) {
  std::uint64_t next = value + energy_uj;
  while (next > range) next -= range + unit;
  return next;
}

}  // namespace

TEST_CASE("powercap zone names give the domain, package and die", "[rapl]") {
  struct Row {
    const char* name;
    std::optional<ZoneName> expected;
  };
  const Row row = GENERATE(Row{"package-0", ZoneName{Domain::package, 0u, std::nullopt}},
                           Row{"package-13\n", ZoneName{Domain::package, 13u, std::nullopt}},
                           Row{"package-1-die-2", ZoneName{Domain::package, 1u, 2u}},
                           Row{"core", ZoneName{Domain::core, std::nullopt, std::nullopt}},
                           Row{"uncore", ZoneName{Domain::uncore, std::nullopt, std::nullopt}},
                           Row{"dram", ZoneName{Domain::dram, std::nullopt, std::nullopt}},
                           Row{"psys", ZoneName{Domain::psys, std::nullopt, std::nullopt}},
                           Row{"psys-1", ZoneName{Domain::psys, 1u, std::nullopt}},
                           Row{"package-", std::nullopt}, Row{"package-x", std::nullopt},
                           Row{"package-0-die-", std::nullopt}, Row{"gpu", std::nullopt},
                           Row{"", std::nullopt});
  CAPTURE(row.name);
  const auto parsed = parse_zone_name(row.name);
  REQUIRE(parsed.has_value() == row.expected.has_value());
  if (parsed) {
    CHECK(parsed->domain == row.expected->domain);
    CHECK(parsed->package == row.expected->package);
    CHECK(parsed->die == row.expected->die);
  }
}

TEST_CASE("powercap counter text: digits, optionally zero-padded, then only whitespace", "[rapl]") {
  struct Row {
    const char* what;
    std::string text;
    std::optional<std::uint64_t> expected;
  };
  const Row row = GENERATE(
      Row{"as sysfs prints it", "123456789\n", 123456789u}, Row{"zero", "0\n", 0u},
      Row{"no newline", "42", 42u}, Row{"leading zeros (fixtures)", "0000004999\n", 4999u},
      Row{"trailing spaces (fixtures)", "4999      \n", 4999u},
      Row{"largest", "18446744073709551615\n", UINT64_MAX}, Row{"empty", "", std::nullopt},
      Row{"only a newline", "\n", std::nullopt}, Row{"only spaces", "     \n", std::nullopt},
      Row{"leading space", " 123\n", std::nullopt}, Row{"inner space", "12 3\n", std::nullopt},
      Row{"sign", "+123\n", std::nullopt}, Row{"negative", "-1\n", std::nullopt},
      Row{"hex", "0x10\n", std::nullopt}, Row{"letters after digits", "123abc\n", std::nullopt},
      Row{"junk after whitespace", "123 x\n", std::nullopt},
      Row{"a second line", "123\n456\n", std::nullopt}, Row{"exponent", "1e6\n", std::nullopt},
      Row{"NUL after digits", std::string("123\0", 4), std::nullopt},
      Row{"overflow", "18446744073709551616\n", std::nullopt});
  CAPTURE(row.what, row.text);
  CHECK(parse_counter_text(row.text) == row.expected);
}

TEST_CASE("powercap reads each energy_uj through the descriptor it opened at startup", "[rapl]") {
  TempDir dir;
  const std::uint64_t range = 5000000;
  write_powercap_tree(dir, {{"intel-rapl:0", "package-0", 1000, range, 0}});
  auto probe =
      open_powercap_source((dir.path() / "sys").string(), two_package_topology(), DomainSet::all());
  REQUIRE(probe.source != nullptr);
  REQUIRE(probe.source->counters().size() == 1);
  EnergySource& source = *probe.source;
  const auto energy = dir.path() / powercap_path("intel-rapl:0") / "energy_uj";
  CHECK(source.read(0).value == 1000);

  // Moved away, the path no longer opens: only a descriptor kept from startup still reads the
  // file, and each read (pread at offset 0) sees the value written since.
  const auto moved = energy.string() + ".moved";
  std::filesystem::rename(energy, moved);
  for (std::uint64_t value : {2000u, 4999999u, 7u}) {
    overwrite_in_place(moved, value);
    const auto reading = source.read(0);
    CAPTURE(value);
    CHECK(reading.ok());
    CHECK(reading.value == value);
  }
  // And a new file at the old path is not what the source reads.
  dir.write(powercap_path("intel-rapl:0") + "/energy_uj", "0000123\n");
  CHECK(source.read(0).value == 7);

  // Text that is not a counter is EINVAL, not a value.
  {
    std::ofstream junk(moved, std::ios::binary | std::ios::in | std::ios::out);
    junk << "00x0007\n";
  }
  const auto bad = source.read(0);
  CHECK(bad.error == EINVAL);
}

TEST_CASE("powercap fixtures rewrite energy_uj in place at a fixed width", "[rapl]") {
  TempDir dir;
  const std::uint64_t range = range_for_unit(61);
  write_powercap_tree(dir, {{"intel-rapl:0", "package-0", 5, range, 0}});
  const auto energy = dir.path() / powercap_path("intel-rapl:0") / "energy_uj";
  const std::size_t width = std::to_string(range).size();
  CHECK(hwperf::test::read_file(energy) == std::string(width - 1, '0') + "5\n");
  struct stat before {};
  REQUIRE(::stat(energy.c_str(), &before) == 0);
  set_energy(dir, "intel-rapl:0", range);
  struct stat after {};
  REQUIRE(::stat(energy.c_str(), &after) == 0);
  CHECK(after.st_ino == before.st_ino);  // the same file, not a replacement
  CHECK(hwperf::test::read_file(energy) == std::to_string(range) + "\n");
  CHECK_THROWS(set_energy(dir, "intel-rapl:0", range * 10));  // wider than the file
}

TEST_CASE("powercap finds every zone of a two-package tree once, by name", "[rapl]") {
  TempDir dir;
  const auto zones = two_package_zones();
  write_powercap_tree(dir, zones);
  auto probe =
      open_powercap_source((dir.path() / "sys").string(), two_package_topology(), DomainSet::all());
  REQUIRE(probe.source != nullptr);
  CHECK(probe.reason == "ok");
  const EnergySource& source = *probe.source;
  CHECK(source.interface() == RaplInterface::powercap);

  // Every intel-rapl zone is one counter; the MMIO duplicate of package-0 is not.
  std::size_t expected_count = 0;
  for (const auto& zone : zones) expected_count += zone.dir.rfind("intel-rapl:", 0) == 0 ? 1 : 0;
  CHECK(source.counters().size() == expected_count);
  std::set<Key> keys;
  for (const auto& info : source.counters()) keys.insert(key_of(info));
  CHECK(keys.size() == source.counters().size());

  // intel-rapl:0 is package-1, and its subzones belong to package 1 too.
  const std::map<std::string, Key> where = {
      {"intel-rapl:0", {Domain::package, 1u, std::nullopt}},
      {"intel-rapl:0:0", {Domain::core, 1u, std::nullopt}},
      {"intel-rapl:0:1", {Domain::uncore, 1u, std::nullopt}},
      {"intel-rapl:0:2", {Domain::dram, 1u, std::nullopt}},
      {"intel-rapl:1", {Domain::package, 0u, std::nullopt}},
      {"intel-rapl:1:0", {Domain::core, 0u, std::nullopt}},
      {"intel-rapl:1:1", {Domain::uncore, 0u, std::nullopt}},
      {"intel-rapl:1:2", {Domain::dram, 0u, std::nullopt}},
      {"intel-rapl:2", {Domain::psys, std::nullopt, std::nullopt}}};
  for (const auto& zone : zones) {
    const auto expected = where.find(zone.dir);
    if (expected == where.end()) continue;
    CAPTURE(zone.dir);
    const auto [domain, package, die] = expected->second;
    const CounterInfo* info = find_counter(source, domain, package, die);
    REQUIRE(info != nullptr);
    CHECK(info->source == (dir.path() / powercap_path(zone.dir) / "energy_uj").string());
    // Each zone wraps at its own range: DRAM's differs from the package's.
    CHECK(info->scale.rule == WrapRule::powercap_range);
    CHECK(info->scale.range == zone.range_uj);
    CHECK(info->scale.counts_per_joule == 1000000);
  }

  // The hint is the largest constraint of the package zone (PL2, written as PL1 * 5/4), in W.
  const auto hints = source.package_power_hints();
  for (const auto& zone : zones) {
    if (zone.long_term_limit_uw == 0 || zone.dir.rfind("intel-rapl:", 0) != 0) continue;
    const unsigned package = parse_zone_name(zone.name)->package.value();
    CAPTURE(zone.dir);
    REQUIRE(hints.count(package) == 1);
    CHECK(hints.at(package) ==
          Approx(static_cast<double>(zone.long_term_limit_uw + zone.long_term_limit_uw / 4) / 1e6));
  }
}

TEST_CASE("powercap: an MMIO zone is used when it is the only one for its package", "[rapl]") {
  TempDir dir;
  const std::uint64_t range = range_for_unit(61);
  write_powercap_tree(dir, {{"intel-rapl:0", "package-0", 1000, range, 0},
                            {"intel-rapl-mmio:0", "package-1", 2000, range, 0}});
  auto probe =
      open_powercap_source((dir.path() / "sys").string(), two_package_topology(), DomainSet::all());
  REQUIRE(probe.source != nullptr);
  CHECK(probe.source->counters().size() == 2);
  const CounterInfo* mmio = find_counter(*probe.source, Domain::package, 1u);
  REQUIRE(mmio != nullptr);
  CHECK(mmio->source.find("intel-rapl-mmio:0") != std::string::npos);
}

TEST_CASE("powercap: per-die zones carry the die, subzones inherit it", "[rapl]") {
  TempDir dir;
  const std::uint64_t range = range_for_unit(61);
  write_powercap_tree(dir, {{"intel-rapl:0", "package-0-die-0", 1, range, 0},
                            {"intel-rapl:0:0", "dram", 2, range, 0},
                            {"intel-rapl:1", "package-0-die-1", 3, range, 0},
                            {"intel-rapl:1:0", "dram", 4, range, 0}});
  auto probe =
      open_powercap_source((dir.path() / "sys").string(), two_package_topology(), DomainSet::all());
  REQUIRE(probe.source != nullptr);
  for (unsigned die : {0u, 1u}) {
    CAPTURE(die);
    CHECK(find_counter(*probe.source, Domain::package, 0u, die) != nullptr);
    CHECK(find_counter(*probe.source, Domain::dram, 0u, die) != nullptr);
  }
}

TEST_CASE("powercap: psys-N is per package", "[rapl]") {
  TempDir dir;
  const std::uint64_t range = range_for_unit(61);
  write_powercap_tree(dir, {{"intel-rapl:0", "package-0", 1, range, 0},
                            {"intel-rapl:1", "psys-0", 2, range, 0},
                            {"intel-rapl:2", "package-1", 3, range, 0},
                            {"intel-rapl:3", "psys-1", 4, range, 0}});
  auto probe =
      open_powercap_source((dir.path() / "sys").string(), two_package_topology(), DomainSet::all());
  REQUIRE(probe.source != nullptr);
  CHECK(find_counter(*probe.source, Domain::psys, 0u) != nullptr);
  CHECK(find_counter(*probe.source, Domain::psys, 1u) != nullptr);
}

TEST_CASE("powercap honours the domain filter", "[rapl]") {
  TempDir dir;
  write_powercap_tree(dir, two_package_zones());
  DomainSet wanted = DomainSet::none();
  wanted.insert(Domain::package);
  wanted.insert(Domain::dram);
  auto probe = open_powercap_source((dir.path() / "sys").string(), two_package_topology(), wanted);
  REQUIRE(probe.source != nullptr);
  for (const auto& info : probe.source->counters()) {
    CAPTURE(info.source);
    CHECK(wanted.contains(info.domain));
  }
  CHECK(probe.source->counters().size() == 4);  // package and dram of two packages
}

TEST_CASE("powercap without a tree says so and names the remedy", "[rapl]") {
  TempDir dir;
  dir.write("sys/.keep", "");
  SECTION("no /sys/class/powercap (no driver, or masked in a container)") {
    auto probe = open_powercap_source((dir.path() / "sys").string(), two_package_topology(),
                                      DomainSet::all());
    CHECK(probe.source == nullptr);
    CHECK(probe.interface == RaplInterface::powercap);
    CHECK(probe.reason == "absent");
    CHECK_THAT(probe.message, Catch::Contains("ENOENT"));
    CHECK_THAT(probe.message, Catch::Contains((dir.path() / "sys/class/powercap").string()));
    CHECK_THAT(probe.message, Catch::Contains("modprobe intel_rapl_msr"));
    CHECK_THAT(probe.message, Catch::Contains("/sys:/sys:ro"));
  }
  SECTION("a powercap class with no RAPL zones") {
    dir.write("sys/class/powercap/dtpm/enabled", "1\n");
    auto probe = open_powercap_source((dir.path() / "sys").string(), two_package_topology(),
                                      DomainSet::all());
    CHECK(probe.source == nullptr);
    CHECK(probe.reason == "absent");
    CHECK_THAT(probe.message, Catch::Contains("no intel-rapl zones"));
  }
}

TEST_CASE("powercap: root-only energy_uj is a permission problem with its remedy", "[rapl]") {
  // Root reads anything, so the probe runs in a child that has become nobody.
  TempDir dir;
  write_powercap_tree(dir, two_package_zones());
  for (const auto& zone : two_package_zones()) {
    ::chmod((dir.path() / powercap_path(zone.dir) / "energy_uj").c_str(), 0400);
  }
  const std::string report = run_as_nobody(dir, [&] {
    const auto probe = open_powercap_source((dir.path() / "sys").string(), two_package_topology(),
                                            DomainSet::all());
    return (probe.source ? "source" : probe.reason) + "\n" + probe.message;
  });
  INFO(report);
  CHECK(report.rfind("permission_denied\n", 0) == 0);
  CHECK_THAT(report, Catch::Contains("EACCES"));
  CHECK_THAT(report, Catch::Contains("energy_uj"));
  CHECK_THAT(report, Catch::Contains("run the exporter as root"));
  CHECK_THAT(report, Catch::Contains("chmod"));
  CHECK_THAT(report, Catch::Contains("--privileged"));
}

TEST_CASE("powercap: a zone without max_energy_range_uj is skipped, the rest served", "[rapl]") {
  TempDir dir;
  write_powercap_tree(dir, two_package_zones());
  std::filesystem::remove(dir.path() / powercap_path("intel-rapl:0:2") / "max_energy_range_uj");
  auto probe =
      open_powercap_source((dir.path() / "sys").string(), two_package_topology(), DomainSet::all());
  REQUIRE(probe.source != nullptr);
  CHECK(find_counter(*probe.source, Domain::dram, 1u) == nullptr);
  CHECK(find_counter(*probe.source, Domain::dram, 0u) != nullptr);
}

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
  auto probe =
      open_powercap_source((dir.path() / "sys").string(), two_package_topology(), DomainSet::all());
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
  const std::uint64_t range = range_for_unit(61);
  const std::vector<Zone> zones = {
      {"intel-rapl-tpmi:0", "package-0-die-0", 1000000, range, 0},
      {"intel-rapl-tpmi:0:0", "dram", 1100000, range, 0},
      {"intel-rapl-tpmi:1", "package-0-die-1", 2000000, range, 0},
      {"intel-rapl-tpmi:2", "package-1-die-0", 3000000, range, 0},
      {"intel-rapl:0", "psys", 4000000, range, 0},
      {"intel-rapl:1", "package-0-die-0", 5000000, range, 0},
  };
  TempDir dir;
  dir.write("sys/class/powercap/intel-rapl-tpmi/enabled", "1\n");
  write_powercap_tree(dir, zones);
  auto probe =
      open_powercap_source((dir.path() / "sys").string(), two_package_topology(), DomainSet::all());
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
