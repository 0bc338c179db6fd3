// The topology collector's families from the synthetic machine and the XML fixture, and the live
// machine read under --path.sysfs and --path.procfs (dies, CPU identity).
#include "tests/catch.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <numeric>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <prometheus/text_serializer.h>

#include "collectors/topology/topology_collector.h"
#include "common/cpu_list.h"
#include "tests/support/support.h"
#include "tests/support/topology_fixture.h"
#include "tests/support/rapl_fixtures.h"
#include "topology/topology.h"

using namespace hwperf;
using namespace hwperf::test::topology_fixture;

namespace {

// The topology's families are all constant; prometheus-cpp's own serializer writes them, so the
// exporter's writer is not what these tests rely on.
std::string exposition(Collector& collector) {
  std::vector<prometheus::MetricFamily> families;
  collect_constant(collector, families);
  return prometheus::TextSerializer().Serialize(families);
}

std::map<std::string, std::string> cpu_cache(unsigned cpu, const std::string& cache) {
  return {{"cpu", std::to_string(cpu)}, {"cache", cache}};
}

}  // namespace

TEST_CASE("the topology collector exports every CPU and each of its caches", "[topology]") {
  const Topology topology = Topology::load(source(TopologyConfig::Kind::xml, fixture::path()));
  const auto collector = make_topology_collector(topology);
  CHECK(collector->name() == "topology");

  const std::string text = exposition(*collector);
  for (const char* family :
       {"hwperf_cpu_info", "hwperf_cpu_cache_size_bytes", "hwperf_cpu_cache_line_size_bytes",
        "hwperf_cpu_cache_associativity_ways", "hwperf_cpu_cache_shared_cpus"}) {
    CHECK_THAT(text, Catch::Contains(std::string("# TYPE ") + family + " gauge\n"));
    CHECK_THAT(text, Catch::Contains(std::string("# HELP ") + family + " "));
  }

  const auto samples = test::parse_exposition(text);
  CHECK(test::find_samples(samples, "hwperf_cpu_info").size() == fixture::kCpuCount);
  for (const HardwareThread& thread : topology.threads()) {
    const auto info = test::find_samples(samples, "hwperf_cpu_info",
                                         {{"cpu", std::to_string(thread.cpu)},
                                          {"core", std::to_string(thread.core)},
                                          {"package", std::to_string(thread.package)},
                                          {"numa_node", std::to_string(thread.numa_node)}});
    REQUIRE(info.size() == 1);
    CHECK(info.front().value == 1);
  }

  const std::size_t per_cpu = std::size(fixture::kCaches);
  CHECK(test::find_samples(samples, "hwperf_cpu_cache_size_bytes").size() ==
        fixture::kCpuCount * per_cpu);
  for (const Cache& cache : topology.caches()) {
    for (unsigned cpu : cache.cpus) {
      const auto labels = cpu_cache(cpu, cache.label());
      CAPTURE(cpu, cache.label());
      const auto size = test::find_samples(samples, "hwperf_cpu_cache_size_bytes", labels);
      const auto line = test::find_samples(samples, "hwperf_cpu_cache_line_size_bytes", labels);
      const auto ways = test::find_samples(samples, "hwperf_cpu_cache_associativity_ways", labels);
      const auto shared = test::find_samples(samples, "hwperf_cpu_cache_shared_cpus", labels);
      REQUIRE(size.size() == 1);
      REQUIRE(line.size() == 1);
      REQUIRE(ways.size() == 1);
      REQUIRE(shared.size() == 1);
      CHECK(size.front().value == static_cast<double>(cache.size_bytes));
      CHECK(line.front().value == cache.line_size_bytes);
      CHECK(ways.front().value == cache.associativity);
      CHECK(shared.front().value == static_cast<double>(cache.cpus.size()));
    }
  }

  // Read straight from /metrics, a CPU's caches are the fixture's: second thread of the last core
  // of package 1.
  const unsigned cpu = fixture::cpu_of(1, fixture::kCoresPerPackage - 1, 1);
  for (const auto& spec : fixture::kCaches) {
    const auto labels = cpu_cache(cpu, spec.label);
    CAPTURE(spec.label);
    REQUIRE(test::find_samples(samples, "hwperf_cpu_cache_size_bytes", labels).size() == 1);
    CHECK(test::find_samples(samples, "hwperf_cpu_cache_size_bytes", labels).front().value ==
          static_cast<double>(spec.size));
    CHECK(
        test::find_samples(samples, "hwperf_cpu_cache_associativity_ways", labels).front().value ==
        spec.ways);
    const double sharing = std::string(spec.label) == "L3"
                               ? fixture::kCoresPerPackage * fixture::kThreadsPerCore
                               : fixture::kThreadsPerCore;
    CHECK(test::find_samples(samples, "hwperf_cpu_cache_shared_cpus", labels).front().value ==
          sharing);
  }

  // Nothing is left for a scrape to build: the exporter serializes the constant families once.
  std::vector<prometheus::MetricFamily> scraped;
  collector->collect(scraped);
  CHECK(scraped.empty());
  std::vector<prometheus::MetricFamily> twice;
  collect_constant(*collector, twice);
  const std::size_t once = twice.size();
  REQUIRE(once > 0);
  collect_constant(*collector, twice);
  CHECK(twice.size() == 2 * once);
  CHECK(exposition(*collector) == text);
}

TEST_CASE("the topology collector leaves out what the machine does not know", "[topology]") {
  constexpr std::uint64_t kSize = 64 << 10;
  constexpr unsigned kLine = 64;
  const std::vector<HardwareThread> threads = {{0, 0, 0, -1}, {1, 1, 0, -1}};
  const std::vector<Cache> caches = {
      {1, CacheType::data, kSize, kLine, -1, {0}},     // fully associative: size / line ways
      {1, CacheType::instruction, kSize, 0, -1, {0}},  // fully associative, line unknown
      {2, CacheType::unified, 0, kLine, 0, {0, 1}},    // size and ways unknown
  };
  const Topology topology(threads, caches, "hand-built");
  const auto collector = make_topology_collector(topology);
  const auto samples = test::parse_exposition(exposition(*collector));

  const auto info = test::find_samples(samples, "hwperf_cpu_info", {{"cpu", "1"}});
  REQUIRE(info.size() == 1);
  CHECK(info.front().labels.at("numa_node").empty());

  const auto ways = [&](unsigned cpu, const std::string& cache) {
    return test::find_samples(samples, "hwperf_cpu_cache_associativity_ways",
                              cpu_cache(cpu, cache));
  };
  REQUIRE(ways(0, "L1d").size() == 1);
  CHECK(ways(0, "L1d").front().value == static_cast<double>(kSize / kLine));
  CHECK(ways(0, "L1i").empty());
  CHECK(ways(1, "L2").empty());
  CHECK(
      test::find_samples(samples, "hwperf_cpu_cache_line_size_bytes", cpu_cache(0, "L1i")).empty());
  CHECK(test::find_samples(samples, "hwperf_cpu_cache_size_bytes", cpu_cache(1, "L2")).empty());
  CHECK(test::find_samples(samples, "hwperf_cpu_cache_line_size_bytes", cpu_cache(1, "L2"))
            .front()
            .value == kLine);
  const auto shared =
      test::find_samples(samples, "hwperf_cpu_cache_shared_cpus", cpu_cache(1, "L2"));
  REQUIRE(shared.size() == 1);
  CHECK(shared.front().value == static_cast<double>(caches[2].cpus.size()));
}

TEST_CASE("a family with no samples is left out, HELP and all", "[topology]") {
  // Synthetic caches never know their associativity.
  const Topology topology =
      Topology::load(source(TopologyConfig::Kind::synthetic, synthetic_description()));
  const auto collector = make_topology_collector(topology);
  const std::string text = exposition(*collector);
  CHECK_THAT(text, !Catch::Contains("hwperf_cpu_cache_associativity_ways"));
  CHECK_THAT(text, Catch::Contains("# TYPE hwperf_cpu_cache_size_bytes gauge"));
}

namespace {

// A host's /sys as the kernel lays it out for CPUs (cpuN/topology/*, masks as comma-free 32-bit
// hex words): `packages` packages of `dies` dies of `cores` single-thread cores each.
void write_cpu_sysfs(const test::TempDir& root, unsigned packages, unsigned dies, unsigned cores) {
  const unsigned count = packages * dies * cores;
  const std::string range = "0-" + std::to_string(count - 1) + "\n";
  for (const char* file : {"online", "possible", "present"}) {
    root.write(std::string("sys/devices/system/cpu/") + file, range);
  }
  auto mask = [](unsigned first, unsigned n) {
    char text[16];
    std::snprintf(text, sizeof text, "%08x\n", ((1u << n) - 1) << first);
    return std::string(text);
  };
  for (unsigned cpu = 0; cpu < count; ++cpu) {
    const unsigned package = cpu / (dies * cores);
    const unsigned die = (cpu / cores) % dies;
    const std::string dir = "sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    root.write(dir + "physical_package_id", std::to_string(package) + "\n");
    root.write(dir + "die_id", std::to_string(die) + "\n");
    root.write(dir + "core_id", std::to_string(cpu % (dies * cores)) + "\n");
    root.write(dir + "thread_siblings", mask(cpu, 1));
    root.write(dir + "core_cpus", mask(cpu, 1));
    root.write(dir + "die_cpus", mask(cpu / cores * cores, cores));
    root.write(dir + "package_cpus", mask(package * dies * cores, dies * cores));
    root.write(dir + "core_siblings", mask(package * dies * cores, dies * cores));
  }
  root.write("proc/cpuinfo", "processor\t: 0\nvendor_id\t: GenuineIntel\n\n");
}

}  // namespace

TEST_CASE("the live machine is read under --path.sysfs, dies included", "[topology]") {
  // As in a container that mounts the host's /sys at /host/sys: hwloc must read the same tree as
  // every collector, not the container's own.
  test::TempDir host;
  const unsigned packages = 2, dies = 2, cores = 2;
  write_cpu_sysfs(host, packages, dies, cores);
  PathsConfig paths;
  paths.sysfs = (host.path() / "sys").string();
  paths.procfs = (host.path() / "proc").string();
  const Topology topology = Topology::load(TopologyConfig{}, paths);
  INFO(topology.description());
  REQUIRE(topology.threads().size() == packages * dies * cores);
  for (const HardwareThread& thread : topology.threads()) {
    CAPTURE(thread.cpu);
    CHECK(thread.package == thread.cpu / (dies * cores));
    CHECK(thread.die == (thread.cpu / cores) % dies);
  }
  CHECK_THAT(topology.description(), Catch::Contains("read under " + host.path().string()));

  // One counter per (package, die); per package where the counters are package-wide.
  const auto per_die = topology.package_targets();
  REQUIRE(per_die.size() == packages * dies);
  for (const CpuTarget& target : per_die) {
    REQUIRE(target.die.has_value());
    CHECK(topology.find(target.cpu)->die == *target.die);
    CHECK(topology.find(target.cpu)->package == target.package);
  }
  const auto per_package = topology.package_targets({}, false);
  REQUIRE(per_package.size() == packages);
  for (const CpuTarget& target : per_package) CHECK_FALSE(target.die.has_value());
  // A preferred CPU (a PMU's cpumask) stands for its die.
  const unsigned last = packages * dies * cores - 1;
  const auto preferred = topology.package_targets({last});
  CHECK(preferred.back().cpu == last);
  CHECK(topology.core_targets().size() == packages * dies * cores);
}

TEST_CASE("cpuinfo gives the first processor's vendor, family and model", "[topology]") {
  using hwperf::test::rapl_fixture::cpuinfo;
  const auto intel = parse_cpuinfo(cpuinfo("GenuineIntel", 6, 85));
  REQUIRE(intel);
  CHECK(intel->vendor == "GenuineIntel");
  CHECK(intel->family == 6);
  CHECK(intel->model == 85);
  CHECK(intel->describe() == "GenuineIntel family 6 model 85");
  const auto amd = parse_cpuinfo(cpuinfo("AuthenticAMD", 25, 1));
  REQUIRE(amd);
  CHECK(amd->family == 25);
  CHECK_FALSE(parse_cpuinfo("processor\t: 0\nvendor_id\t: GenuineIntel\n"));
  CHECK_FALSE(parse_cpuinfo(""));
}

TEST_CASE(
    "the topology carries the CPU identity read under --path.procfs, whatever describes "
    "its shape",
    "[topology]") {
  for (const auto& [vendor, family, model] :
       {std::tuple<std::string, unsigned, unsigned>{"AuthenticAMD", 0x1A, 0x11},
        {"GenuineIntel", 6, 0xCF}}) {
    CAPTURE(vendor);
    test::TempDir dir;
    dir.write("proc/cpuinfo", hwperf::test::rapl_fixture::cpuinfo(vendor, family, model));
    PathsConfig paths;
    paths.procfs = (dir.path() / "proc").string();
    TopologyConfig synthetic;
    synthetic.kind = TopologyConfig::Kind::synthetic;
    synthetic.argument = "pack:2 core:2 pu:1";
    const Topology topology = Topology::load(synthetic, paths);
    REQUIRE(topology.cpu_identity());
    CHECK(topology.cpu_identity()->vendor == vendor);
    CHECK(topology.cpu_identity()->family == family);
    CHECK(topology.cpu_identity()->model == model);
  }
  test::TempDir empty;
  PathsConfig nowhere;
  nowhere.procfs = (empty.path() / "proc").string();
  TopologyConfig synthetic;
  synthetic.kind = TopologyConfig::Kind::synthetic;
  synthetic.argument = "pack:1 core:1 pu:1";
  CHECK_FALSE(Topology::load(synthetic, nowhere).cpu_identity());
}
