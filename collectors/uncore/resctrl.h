// resctrl memory bandwidth monitoring (MBM) as a second source of memory traffic: the kernel's
// byte counters per L3 domain under <sysfs>/fs/resctrl, for the default group, each control
// group and each monitoring group (Documentation/arch/x86/resctrl.rst, "Monitoring"). Files are
// opened once at startup and read with pread on every scrape; resctrl is never mounted and no
// group is ever created here. Groups made after startup are seen after a restart.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <prometheus/metric_family.h>

#include "common/unique_fd.h"
#include "topology/topology.h"

namespace hwperf::uncore {

inline constexpr const char* kResctrlMountHint =
    "mount it with `mount -t resctrl resctrl /sys/fs/resctrl` (needs a CPU with RDT monitoring "
    "or AMD PQoS and CONFIG_X86_CPU_RESCTRL; in a container, mount the host's /sys/fs/resctrl)";

struct ResctrlCounter {
  std::string group;  // "/" for the default group, else the control group's directory
  std::string
      monitor_group;  // "" for a control group's own counts; else its name under mon_groups/
  unsigned package = 0;
  bool local = false;  // mbm_local_bytes; else mbm_total_bytes
  std::string path;
  UniqueFd fd;
};

struct ResctrlSource {
  std::string reason = "absent";  // ok, not_mounted, absent (no MBM), unusable
  std::string detail = "resctrl was not looked at";
  std::vector<ResctrlCounter> counters;
};

// L3 cache id (the NN of mon_L3_NN) to package, from the topology's L3 caches and each one's id
// in <sysfs>/devices/system/cpu/cpu<first CPU>/cache/index3/id: the Topology value carries no
// cache id, and resctrl names domains by it.
std::map<unsigned, unsigned> l3_packages(const std::string& sysfs_root, const Topology& topology);

ResctrlSource open_resctrl(const std::string& sysfs_root,
                           const std::map<unsigned, unsigned>& l3_to_package);

// The four resctrl families, named once; collect() reads every counter (pread) and appends:
//   hwperf_resctrl_memory_bytes_total{group,package}            (mbm_total_bytes)
//   hwperf_resctrl_local_memory_bytes_total{group,package}      (mbm_local_bytes)
//   hwperf_resctrl_monitor_group_memory_bytes_total{group,monitor_group,package}
//   hwperf_resctrl_monitor_group_local_memory_bytes_total{group,monitor_group,package}
// Control groups (the default group "/" and each top-level group) partition the tasks, so a sum
// over `group` is the package's traffic; monitoring groups are parts of their control group's
// counts, hence families of their own.
class ResctrlFamilies {
 public:
  ResctrlFamilies();
  void collect(const std::vector<ResctrlCounter>& counters,
               std::vector<prometheus::MetricFamily>& out) const;

 private:
  std::array<prometheus::MetricFamily, 4> families_;
};

}  // namespace hwperf::uncore
