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
#include "tests/support.h"
#include "tests/unit/test_rapl_fixtures.h"
#include "topology/topology.h"

using namespace hwperf;

namespace {

TopologyConfig source(TopologyConfig::Kind kind, std::string argument) {
  TopologyConfig config;
  config.kind = kind;
  config.argument = std::move(argument);
  return config;
}

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

// The topology's families are all constant; prometheus-cpp's own serializer writes them, so the
// exporter's writer is not what these tests rely on.
std::string exposition(const Collector& collector) {
  std::vector<prometheus::MetricFamily> families;
  collector.collect_constant(families);
  return prometheus::TextSerializer().Serialize(families);
}

std::map<std::string, std::string> cpu_cache(unsigned cpu, const std::string& cache) {
  return {{"cpu", std::to_string(cpu)}, {"cache", cache}};
}

// ---- The synthetic machine: every expected value below is computed from these constants. ----
constexpr unsigned kPackages = 2;
constexpr unsigned kCoresPerPackage = 4;
constexpr unsigned kThreadsPerCore = 2;
constexpr std::uint64_t kL3Bytes = 32ull << 20;
constexpr std::uint64_t kL2Bytes = 1ull << 20;
constexpr std::uint64_t kL1dBytes = 48ull << 10;
constexpr std::uint64_t kL1iBytes = 32ull << 10;

std::string synthetic_description() {
  // One NUMA node per package ([numa]), caches given in plain bytes so nothing depends on how
  // hwloc reads unit suffixes.
  return "pack:" + std::to_string(kPackages) + " [numa] l3:1(size=" + std::to_string(kL3Bytes) +
         ") l2:" + std::to_string(kCoresPerPackage) + "(size=" + std::to_string(kL2Bytes) +
         ") l1d:1(size=" + std::to_string(kL1dBytes) + ") l1i:1(size=" + std::to_string(kL1iBytes) +
         ") core:1 pu:" + std::to_string(kThreadsPerCore);
}

// ---- The XML fixture's layout, as documented in tests/fixtures/topology/README.md. ----
namespace fixture {
constexpr unsigned kPackages = 2;
constexpr unsigned kCoresPerPackage = 4;
constexpr unsigned kThreadsPerCore = 2;
constexpr unsigned kCoreIds[kCoresPerPackage] = {0, 1, 8, 9};
constexpr unsigned kNumaPerPackage = 2;
constexpr unsigned kCpuCount = kPackages * kCoresPerPackage * kThreadsPerCore;
// Linux-style interleaving: the first threads of every package, then the second threads.
constexpr unsigned cpu_of(unsigned package, unsigned slot, unsigned thread) {
  return thread * kPackages * kCoresPerPackage + package * kCoresPerPackage + slot;
}
struct CacheSpec {
  const char* label;
  std::uint64_t size;
  int ways;
};
constexpr CacheSpec kCaches[] = {
    {"L1d", 48ull << 10, 12},
    {"L1i", 32ull << 10, 8},
    {"L2", 1280ull << 10, 20},
    {"L3", 30ull << 20, 12},
};
constexpr unsigned kLineBytes = 64;

std::string path() { return test::fixtures_dir() + "/topology/two_socket_snc2.xml"; }
}  // namespace fixture

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
  collector->collect_constant(twice);
  const std::size_t once = twice.size();
  REQUIRE(once > 0);
  collector->collect_constant(twice);
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
