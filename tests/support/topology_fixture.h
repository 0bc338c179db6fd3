// The machines both topology test files describe: a synthetic one whose expected values are
// computed from its constants, and the XML fixture's layout.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "config/config.h"
#include "tests/support/support.h"

namespace hwperf::test::topology_fixture {

inline TopologyConfig source(TopologyConfig::Kind kind, std::string argument) {
  TopologyConfig config;
  config.kind = kind;
  config.argument = std::move(argument);
  return config;
}

// ---- The synthetic machine: every expected value below is computed from these constants. ----
constexpr unsigned kPackages = 2;
constexpr unsigned kCoresPerPackage = 4;
constexpr unsigned kThreadsPerCore = 2;
constexpr std::uint64_t kL3Bytes = 32ull << 20;
constexpr std::uint64_t kL2Bytes = 1ull << 20;
constexpr std::uint64_t kL1dBytes = 48ull << 10;
constexpr std::uint64_t kL1iBytes = 32ull << 10;

inline std::string synthetic_description() {
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

inline std::string path() { return test::fixtures_dir() + "/topology/two_socket_snc2.xml"; }
}  // namespace fixture

}  // namespace hwperf::test::topology_fixture
