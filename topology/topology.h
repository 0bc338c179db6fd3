// The machine's shape as a plain value: built once at startup from hwloc (live machine, XML file
// or synthetic description) and then only read. This header does not include hwloc.h; only
// topology/hwloc_loader.cpp does.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "topology/cpu_identity.h"

namespace hwperf {

struct HardwareThread {
  unsigned cpu = 0;      // Linux CPU number (hwloc PU os_index)
  unsigned core = 0;     // core id (hwloc Core os_index); unique only together with package
  unsigned package = 0;  // package id (hwloc Package os_index, Linux physical_package_id)
  int numa_node = -1;    // NUMA node os_index, -1 when the machine reports none
  unsigned die = 0;      // die id within the package (Linux die_id); 0 where none is reported
};

// One CPU standing for a part of the machine, to open a counter of that part on.
struct CpuTarget {
  unsigned cpu = 0;
  unsigned package = 0;
  std::optional<unsigned> die;  // set only where some package has more than one die
};

enum class CacheType { data, instruction, unified };

struct Cache {
  unsigned level = 0;  // 1, 2, 3, ...
  CacheType type = CacheType::unified;
  std::uint64_t size_bytes = 0;
  unsigned line_size_bytes = 0;  // 0 when unknown
  int associativity = 0;         // ways; -1 fully associative; 0 unknown
  std::vector<unsigned> cpus;    // Linux CPU numbers sharing this cache, ascending
  std::string label() const;     // "L1d", "L1i", "L2", "L3"
};

class Topology {
 public:
  // Throws std::runtime_error with the source and hwloc's reason when it cannot be loaded. The
  // live machine is read under `paths.sysfs` (hwloc's fsroot is the folder holding it) when that
  // tree describes CPUs (devices/system/cpu); otherwise from this process's own /sys.
  static Topology load(const TopologyConfig& source, const PathsConfig& paths = PathsConfig{});
  // Built by hand (tests of other modules that need a topology without hwloc).
  Topology(std::vector<HardwareThread> threads, std::vector<Cache> caches, std::string description,
           std::optional<CpuIdentity> cpu_identity = std::nullopt);

  // Sorted by cpu.
  const std::vector<HardwareThread>& threads() const { return threads_; }
  const std::vector<Cache>& caches() const { return caches_; }
  const std::string& description() const { return description_; }
  // Read from <--path.procfs>/cpuinfo by load(); nothing when unreadable or incomplete.
  const std::optional<CpuIdentity>& cpu_identity() const { return cpu_identity_; }

  const HardwareThread* find(unsigned cpu) const;
  std::vector<unsigned> cpus() const;
  std::vector<unsigned> packages() const;                         // ascending, unique
  std::vector<unsigned> cpus_of_package(unsigned package) const;  // ascending

  // One CPU per (package, die): a CPU of `preferred` where one lies in that die (a PMU's
  // cpumask), else the die's first CPU. With `per_die` false, one per package (counters that
  // are package-wide whatever the kernel calls a die, as on AMD). Ascending by package, die.
  std::vector<CpuTarget> package_targets(const std::vector<unsigned>& preferred = {},
                                         bool per_die = true) const;
  // The first hardware thread of every core, for per-core counters.
  std::vector<CpuTarget> core_targets() const;

 private:
  std::vector<HardwareThread> threads_;
  std::vector<Cache> caches_;
  std::string description_;
  std::optional<CpuIdentity> cpu_identity_;
};

std::string hwloc_library_version();

}  // namespace hwperf
