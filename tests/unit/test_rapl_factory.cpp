// From configuration to a RAPL collector: the order interfaces are tried in over fixture trees,
// configuration errors, and serving with no RAPL at all.
#include "tests/catch.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "collectors/rapl/powercap_source.h"
#include "collectors/rapl/rapl_collector.h"
#include "collectors/rapl/rapl_factory.h"
#include "config/errors.h"
#include "exporter/exposition.h"
#include "tests/support/support.h"
#include "tests/support/rapl_fakes.h"
#include "tests/support/rapl_fixtures.h"

using namespace hwperf;
using namespace hwperf::test::rapl_fakes;
using hwperf::test::with_cpu_identity_from;

namespace {

// The samples of a powercap RAPL collector over `zones`, on a machine whose /proc/cpuinfo names
// that vendor and family: only the vendor decides which zones are exported.
std::vector<Sample> scrape_powercap_as(const std::vector<hwperf::test::rapl_fixture::Zone>& zones,
                                       const std::string& vendor, unsigned family) {
  namespace fixture = hwperf::test::rapl_fixture;
  RaplCollectorConfig config;
  config.interface = RaplInterface::powercap;
  TempDir dir;
  fixture::write_powercap_tree(dir, zones);
  dir.write("dev/.keep", "");
  dir.write("proc/cpuinfo", fixture::cpuinfo(vendor, family, 0x11));
  const PathsConfig paths = fixture::paths_under(dir);
  auto collector =
      make_rapl_collector(config, paths, with_cpu_identity_from(two_packages(), paths.procfs));
  REQUIRE(collector != nullptr);
  return scrape(*collector);
}

}  // namespace

TEST_CASE("auto tries perf, then powercap, then msr, and stops at the first that works", "[rapl]") {
  CHECK(
      interface_order(RaplInterface::automatic) ==
      std::vector<RaplInterface>{RaplInterface::perf, RaplInterface::powercap, RaplInterface::msr});
  CHECK(interface_order(RaplInterface::msr) == std::vector<RaplInterface>{RaplInterface::msr});

  TempDir dir;
  hwperf::test::rapl_fixture::write_powercap_tree(dir,
                                                  hwperf::test::rapl_fixture::two_package_zones());
  dir.write("dev/.keep", "");
  dir.write("proc/cpuinfo", hwperf::test::rapl_fixture::cpuinfo("GenuineIntel", 6, 0x55));
  const PathsConfig paths = hwperf::test::rapl_fixture::paths_under(dir);

  const Topology topology = with_cpu_identity_from(two_packages(), paths.procfs);
  const auto probe = [&](RaplInterface interface) {
    return probe_interfaces(interface, paths, topology, DomainSet::all());
  };
  const auto automatic = probe(RaplInterface::automatic);
  REQUIRE(automatic.size() == 2);
  CHECK(automatic[0].interface == RaplInterface::perf);
  CHECK(automatic[0].source == nullptr);
  CHECK(automatic[1].interface == RaplInterface::powercap);
  CHECK(automatic[1].source != nullptr);

  const auto forced = probe(RaplInterface::msr);
  REQUIRE(forced.size() == 1);
  CHECK(forced[0].interface == RaplInterface::msr);
  CHECK(forced[0].source == nullptr);
  CHECK(forced[0].reason == "absent");
}

TEST_CASE("the configured domains are the ones wanted, all when none are", "[rapl]") {
  RaplCollectorConfig config;
  SECTION("none configured") {
    const DomainSet wanted = wanted_domains(config);
    for (Domain domain : kAllDomains) {
      CHECK(wanted.contains(domain));
    }
  }
  SECTION("valid filters") {
    config.domains = {Domain::dram, Domain::psys};
    const DomainSet wanted = wanted_domains(config);
    CHECK(wanted.contains(Domain::dram));
    CHECK(wanted.contains(Domain::psys));
    CHECK_FALSE(wanted.contains(Domain::package));
  }
  SECTION("disabled means no collector") {
    config.enabled = false;
    CHECK(make_rapl_collector(config, PathsConfig{}, two_packages()) == nullptr);
  }
}

TEST_CASE("make_rapl_collector on empty trees serves, with energy unavailable", "[rapl]") {
  TempDir dir;
  dir.write("sys/.keep", "");
  dir.write("dev/.keep", "");
  dir.write("proc/cpuinfo", hwperf::test::rapl_fixture::cpuinfo("GenuineIntel", 6, 0x55));
  const PathsConfig paths = hwperf::test::rapl_fixture::paths_under(dir);
  auto collector = make_rapl_collector(RaplCollectorConfig{}, paths,
                                       with_cpu_identity_from(two_packages(), paths.procfs));
  REQUIRE(collector != nullptr);
  const auto samples = scrape(*collector);
  CHECK(value_of(samples, "hwperf_rapl_energy_available") == 0);
  for (const char* interface : {"perf", "powercap", "msr"}) {
    CAPTURE(interface);
    CHECK(value_of(samples, "hwperf_rapl_interface_probe_success", {{"interface", interface}}) ==
          0);
  }
}

TEST_CASE(
    "make_rapl_collector takes the CPU from the topology, read under --path.procfs: on AMD "
    "powercap's core zone is left out",
    "[rapl]") {
  namespace fixture = hwperf::test::rapl_fixture;
  const auto zones = fixture::amd_two_package_zones();
  std::size_t packages = 0;
  std::size_t core_zones = 0;
  for (const auto& zone : zones) (zone.name == "core" ? core_zones : packages) += 1;
  REQUIRE(core_zones > 0);
  // The same tree under two /proc/cpuinfo files: only the vendor there decides.
  for (const auto& [vendor, family, cores_exported] :
       {std::tuple<std::string, unsigned, std::size_t>{"AuthenticAMD", 0x19, 0},
        {"GenuineIntel", 6, core_zones}}) {
    CAPTURE(vendor);
    const auto samples = scrape_powercap_as(zones, vendor, family);
    CHECK(value_of(samples, "hwperf_rapl_interface_info", {{"interface", "powercap"}}) == 1);
    CHECK(find_samples(samples, "hwperf_rapl_package_joules_total").size() == packages);
    CHECK(find_samples(samples, "hwperf_rapl_core_joules_total").size() == cores_exported);
  }
}

TEST_CASE(
    "powercap on AMD with one die zone per CCD (Linux 6.10, 6.11) exports each socket's "
    "package energy once",
    "[rapl]") {
  namespace fixture = hwperf::test::rapl_fixture;
  const unsigned ccds = 8;
  const auto zones = fixture::amd_per_ccd_zones(ccds);
  std::set<std::string> sockets;  // the package ids the die zones name
  for (const auto& zone : zones) {
    if (zone.name != "core") sockets.insert(zone.name.substr(8, zone.name.find("-die-") - 8));
  }
  REQUIRE(sockets.size() == 2);
  for (const auto& [vendor, family, package_series] :
       {std::tuple<std::string, unsigned, std::size_t>{"AuthenticAMD", 0x19, 2},
        {"HygonGenuine", 0x18, 2},
        {"GenuineIntel", 6, 2 * ccds}}) {  // Intel dies are real: one series each
    CAPTURE(vendor);
    const auto samples = scrape_powercap_as(zones, vendor, family);
    const auto packages = find_samples(samples, "hwperf_rapl_package_joules_total");
    CHECK(packages.size() == package_series);
    for (const auto& package : sockets) {
      CAPTURE(package);
      const auto found =
          find_samples(samples, "hwperf_rapl_package_joules_total", {{"package", package}});
      CHECK(found.size() == package_series / sockets.size());
      for (const auto& sample : found)
        CHECK(sample.labels.count("die") == (vendor == "GenuineIntel"));
    }
  }
}
