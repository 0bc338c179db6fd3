// The powercap source against fixture trees: zone discovery (names, not directory indexes,
// give the package), the MMIO duplicate, per-zone ranges, power hints and the failure states a
// user meets (no tree, masked tree, root-only energy_uj). Energy across wraps and vendor zones are
// in test_rapl_powercap_zones.cpp.
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
  auto probe = open_tree(dir);
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
  auto probe = open_tree(dir);
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
  auto probe = open_tree(dir);
  REQUIRE(probe.source != nullptr);
  CHECK(probe.source->counters().size() == 2);
  const CounterInfo* mmio = find_counter(*probe.source, Domain::package, 1u);
  REQUIRE(mmio != nullptr);
  CHECK(mmio->source.find("intel-rapl-mmio:0") != std::string::npos);
}

TEST_CASE("powercap: per-die zones carry the die, subzones inherit it", "[rapl]") {
  TempDir dir;
  auto probe = open_named_zones(dir,
                                "intel-rapl:0=package-0-die-0 intel-rapl:0:0=dram "
                                "intel-rapl:1=package-0-die-1 intel-rapl:1:0=dram");
  REQUIRE(probe.source != nullptr);
  for (unsigned die : {0u, 1u}) {
    CAPTURE(die);
    CHECK(find_counter(*probe.source, Domain::package, 0u, die) != nullptr);
    CHECK(find_counter(*probe.source, Domain::dram, 0u, die) != nullptr);
  }
}

TEST_CASE("powercap: psys-N is per package", "[rapl]") {
  TempDir dir;
  auto probe = open_named_zones(
      dir, "intel-rapl:0=package-0 intel-rapl:1=psys-0 intel-rapl:2=package-1 intel-rapl:3=psys-1");
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
    auto probe = open_tree(dir);
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
    auto probe = open_tree(dir);
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
  const std::string report = probe_as_nobody(dir, [&] { return open_tree(dir); });
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
  auto probe = open_tree(dir);
  REQUIRE(probe.source != nullptr);
  CHECK(find_counter(*probe.source, Domain::dram, 1u) == nullptr);
  CHECK(find_counter(*probe.source, Domain::dram, 0u) != nullptr);
}
