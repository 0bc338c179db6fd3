// Topology loading: a hand-built value, the synthetic machine and the XML fixture (CPUs, cores,
// packages, NUMA nodes and caches), and the errors of a source that cannot be loaded. The
// collector and the live machine read under --path.sysfs are in test_topology_collector.cpp.
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

std::vector<unsigned> range(unsigned first, unsigned count) {
  std::vector<unsigned> values(count);
  std::iota(values.begin(), values.end(), first);
  return values;
}

std::string error_of(const TopologyConfig& config) {
  try {
    Topology::load(config);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

const Cache* cache_of(const Topology& topology, unsigned cpu, const std::string& label) {
  for (const Cache& cache : topology.caches()) {
    if (cache.label() == label && std::binary_search(cache.cpus.begin(), cache.cpus.end(), cpu)) {
      return &cache;
    }
  }
  return nullptr;
}

std::size_t count_label(const Topology& topology, const std::string& label) {
  return static_cast<std::size_t>(
      std::count_if(topology.caches().begin(), topology.caches().end(),
                    [&](const Cache& cache) { return cache.label() == label; }));
}

}  // namespace

TEST_CASE("a cache label is its level and, when split, its type", "[topology]") {
  const auto [level, type, expected] = GENERATE(table<unsigned, CacheType, std::string>({
      {1, CacheType::data, "L1d"},
      {1, CacheType::instruction, "L1i"},
      {1, CacheType::unified, "L1"},
      {2, CacheType::unified, "L2"},
      {3, CacheType::unified, "L3"},
      {2, CacheType::data, "L2d"},
  }));
  Cache cache;
  cache.level = level;
  cache.type = type;
  CHECK(cache.label() == expected);
}

TEST_CASE("a hand-built topology is ordered and answers lookups", "[topology]") {
  std::vector<HardwareThread> threads = {{3, 1, 1, 1}, {0, 0, 0, 0}, {2, 1, 1, 1}, {1, 0, 0, 0}};
  Cache l3_package1{3, CacheType::unified, 1 << 20, 64, 16, {3, 2}};
  Cache l3_package0{3, CacheType::unified, 1 << 20, 64, 16, {1, 0}};
  Cache l1d_cpu2{1, CacheType::data, 32 << 10, 64, 8, {2}};
  const Topology topology(threads, {l3_package1, l1d_cpu2, l3_package0}, "hand-built");

  CHECK(topology.cpus() == std::vector<unsigned>{0, 1, 2, 3});
  CHECK(topology.packages() == std::vector<unsigned>{0, 1});
  CHECK(topology.cpus_of_package(1) == std::vector<unsigned>{2, 3});
  CHECK(topology.cpus_of_package(7).empty());
  REQUIRE(topology.find(2) != nullptr);
  CHECK(topology.find(2)->package == 1);
  CHECK(topology.find(4) == nullptr);
  CHECK(topology.description() == "hand-built");

  // Level first, then type, then first CPU; each cache's CPUs ascending.
  REQUIRE(topology.caches().size() == 3);
  CHECK(topology.caches()[0].label() == "L1d");
  CHECK(topology.caches()[1].cpus == std::vector<unsigned>{0, 1});
  CHECK(topology.caches()[2].cpus == std::vector<unsigned>{2, 3});
}

TEST_CASE("a hand-built topology rejects shapes that would give duplicate series", "[topology]") {
  const std::vector<HardwareThread> two = {{0, 0, 0, -1}, {1, 1, 0, -1}};
  SECTION("a CPU listed twice") {
    CHECK_THROWS_WITH(Topology({{0, 0, 0, -1}, {0, 1, 0, -1}}, {}, ""),
                      Catch::Contains("CPU 0 is listed twice"));
  }
  SECTION("a cache over a CPU the topology does not have") {
    CHECK_THROWS_WITH(Topology(two, {Cache{2, CacheType::unified, 1, 64, 8, {0, 5}}}, ""),
                      Catch::Contains("L2 cache lists CPU 5"));
  }
  SECTION("two caches with one label over the same CPU") {
    const Cache a{2, CacheType::unified, 1, 64, 8, {0, 1}};
    const Cache b{2, CacheType::unified, 1, 64, 8, {1}};
    CHECK_THROWS_WITH(Topology(two, {a, b}, ""), Catch::Contains("CPU 1 is under two L2 caches"));
  }
}

TEST_CASE("a synthetic two-package description maps CPUs, cores, packages and caches",
          "[topology]") {
  const TopologyConfig config = source(TopologyConfig::Kind::synthetic, synthetic_description());
  const Topology topology = Topology::load(config);

  const unsigned cpus_per_package = kCoresPerPackage * kThreadsPerCore;
  REQUIRE(topology.threads().size() == kPackages * cpus_per_package);
  CHECK(topology.packages() == range(0, kPackages));
  CHECK(topology.description() == std::to_string(kPackages) + " packages, " +
                                      std::to_string(kPackages * kCoresPerPackage) + " cores, " +
                                      std::to_string(kPackages * cpus_per_package) + " CPUs (" +
                                      config.to_string() + ")");

  for (unsigned package = 0; package < kPackages; ++package) {
    CHECK(topology.cpus_of_package(package) == range(package * cpus_per_package, cpus_per_package));
    for (unsigned slot = 0; slot < kCoresPerPackage; ++slot) {
      // hwloc numbers synthetic cores across the whole machine (see hwloc_loader.cpp).
      const unsigned core = package * kCoresPerPackage + slot;
      for (unsigned thread = 0; thread < kThreadsPerCore; ++thread) {
        const unsigned cpu = core * kThreadsPerCore + thread;
        CAPTURE(cpu);
        const HardwareThread* found = topology.find(cpu);
        REQUIRE(found != nullptr);
        CHECK(found->package == package);
        CHECK(found->core == core);
        CHECK(found->numa_node == static_cast<int>(package));

        const Cache* l2 = cache_of(topology, cpu, "L2");
        const Cache* l3 = cache_of(topology, cpu, "L3");
        REQUIRE(l2 != nullptr);
        REQUIRE(l3 != nullptr);
        CHECK(l2->size_bytes == kL2Bytes);
        CHECK(l2->cpus == range(core * kThreadsPerCore, kThreadsPerCore));
        CHECK(l3->size_bytes == kL3Bytes);
        CHECK(l3->cpus == topology.cpus_of_package(package));
        REQUIRE(cache_of(topology, cpu, "L1d") != nullptr);
        CHECK(cache_of(topology, cpu, "L1d")->size_bytes == kL1dBytes);
        // Instruction caches are dropped by hwloc's default filters; the loader keeps them.
        REQUIRE(cache_of(topology, cpu, "L1i") != nullptr);
        CHECK(cache_of(topology, cpu, "L1i")->size_bytes == kL1iBytes);
      }
    }
  }
  CHECK(count_label(topology, "L3") == kPackages);
  CHECK(count_label(topology, "L2") == kPackages * kCoresPerPackage);
  CHECK(count_label(topology, "L1d") == kPackages * kCoresPerPackage);
  CHECK(count_label(topology, "L1i") == kPackages * kCoresPerPackage);
}

TEST_CASE("PUs without a package or core above them get package 0 and are their own core",
          "[topology]") {
  // A bare "pu:3" has no Package and no Core above the PUs: package falls back to 0 and each PU
  // is its own core.
  const Topology topology = Topology::load(source(TopologyConfig::Kind::synthetic, "pu:3"));
  REQUIRE(topology.threads().size() == 3);
  for (const HardwareThread& thread : topology.threads()) {
    CHECK(thread.package == 0);
    CHECK(thread.core == thread.cpu);
  }
  CHECK(topology.caches().empty());
}

TEST_CASE("a CPU near two NUMA nodes belongs to the lower-numbered one", "[topology]") {
  // Like DRAM plus CPU-less HBM in flat mode: both nodes carry the package's cpuset.
  constexpr unsigned kNodesPerPackage = 2;
  constexpr unsigned kPackageCount = 2;
  std::string description = "pack:" + std::to_string(kPackageCount);
  for (unsigned node = 0; node < kNodesPerPackage; ++node) description += " [numa]";
  const Topology topology =
      Topology::load(source(TopologyConfig::Kind::synthetic, description + " core:2 pu:1"));
  for (unsigned package = 0; package < kPackageCount; ++package) {
    for (unsigned cpu : topology.cpus_of_package(package)) {
      CAPTURE(cpu);
      CHECK(topology.find(cpu)->numa_node == static_cast<int>(package * kNodesPerPackage));
    }
  }
  CHECK(topology.packages() == range(0, kPackageCount));
}

TEST_CASE("the XML fixture maps by OS index, not by hwloc's logical order", "[topology]") {
  const Topology topology = Topology::load(source(TopologyConfig::Kind::xml, fixture::path()));

  REQUIRE(topology.threads().size() == fixture::kCpuCount);
  CHECK(topology.cpus() == range(0, fixture::kCpuCount));
  CHECK(topology.packages() == range(0, fixture::kPackages));

  for (unsigned package = 0; package < fixture::kPackages; ++package) {
    std::vector<unsigned> package_cpus;
    for (unsigned slot = 0; slot < fixture::kCoresPerPackage; ++slot) {
      std::vector<unsigned> core_cpus;
      for (unsigned thread = 0; thread < fixture::kThreadsPerCore; ++thread) {
        core_cpus.push_back(fixture::cpu_of(package, slot, thread));
      }
      for (unsigned cpu : core_cpus) {
        CAPTURE(package, slot, cpu);
        const HardwareThread* found = topology.find(cpu);
        REQUIRE(found != nullptr);
        CHECK(found->package == package);
        CHECK(found->core == fixture::kCoreIds[slot]);
        const unsigned group = slot / (fixture::kCoresPerPackage / fixture::kNumaPerPackage);
        CHECK(found->numa_node == static_cast<int>(package * fixture::kNumaPerPackage + group));
        for (const auto& spec : fixture::kCaches) {
          CAPTURE(spec.label);
          const Cache* cache = cache_of(topology, cpu, spec.label);
          REQUIRE(cache != nullptr);
          CHECK(cache->size_bytes == spec.size);
          CHECK(cache->line_size_bytes == fixture::kLineBytes);
          CHECK(cache->associativity == spec.ways);
          if (std::string(spec.label) != "L3") CHECK(cache->cpus == core_cpus);
        }
      }
      package_cpus.insert(package_cpus.end(), core_cpus.begin(), core_cpus.end());
    }
    std::sort(package_cpus.begin(), package_cpus.end());
    CHECK(topology.cpus_of_package(package) == package_cpus);
    CHECK(cache_of(topology, package_cpus.front(), "L3")->cpus == package_cpus);
  }
  CHECK(topology.description().find(std::to_string(fixture::kCpuCount) + " CPUs") !=
        std::string::npos);
}

TEST_CASE("a topology that cannot be loaded names its source and the reason", "[topology]") {
  SECTION("a missing XML file") {
    test::TempDir dir;
    const std::string missing = (dir.path() / "absent.xml").string();
    const std::string message = error_of(source(TopologyConfig::Kind::xml, missing));
    CHECK_THAT(message, Catch::StartsWith("topology xml:" + missing + ": cannot load: "));
    CHECK_THAT(message, Catch::Contains(std::strerror(ENOENT)));
  }
  SECTION("a file that is not hwloc XML") {
    test::TempDir dir;
    const std::string path = dir.write("garbage.xml", "not xml at all\n").string();
    const std::string message = error_of(source(TopologyConfig::Kind::xml, path));
    CHECK_THAT(message, Catch::StartsWith("topology xml:" + path + ": "));
    CHECK_THAT(message, Catch::Contains("not a valid hwloc XML topology"));
  }
  SECTION("a bad synthetic description") {
    const std::string description = "pack:2 core:lots pu:2";
    const std::string message = error_of(source(TopologyConfig::Kind::synthetic, description));
    CHECK_THAT(message, Catch::StartsWith("topology synthetic:" + description + ": "));
    CHECK_THAT(message, Catch::Contains("invalid synthetic description"));
  }
}
