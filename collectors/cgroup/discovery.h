// One synchronous pass over a cgroup hierarchy: the leaf cgroups to count. The collector's
// background thread repeats it every rescan interval; a scrape never walks the tree.
#pragma once

#include <cstddef>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "collectors/cgroup/identity.h"

namespace hwperf::cgroup {

// What is counted besides the containers and services recognised by name (identity.h): every
// leaf under a root, and leaves whose relative path matches a pattern (std::regex_search).
struct DiscoveryRules {
  std::vector<std::string> roots;  // relative to the hierarchy root, no leading '/'
  std::vector<std::regex> match;
  ContainerRuntime cgroupfs_runtime = ContainerRuntime::none;  // identify_cgroup's
};

// Why a configured root counts nothing (a scan's per-root outcome).
enum class RootState { counting, missing, no_leaf };

struct CgroupScan {
  // Sorted by cgroup path; at most max_cgroups of them.
  std::vector<CgroupIdentity> targets;
  // Eligible leaves left out because of max_cgroups.
  std::size_t left_out_over_cap = 0;
  std::vector<RootState> roots;  // one per DiscoveryRules::roots
};

// root is the hierarchy's mount point as this process reaches it (under --path.sysfs). Only leaves
// (directories without sub-directories) are taken: a perf cgroup event counts descendants too, so
// opening a parent and its child would count twice. A directory vanishing mid-walk is skipped.
CgroupScan scan_cgroups(const std::filesystem::path& root, const DiscoveryRules& rules,
                        std::size_t max_cgroups);

// The recognised containers and services only.
inline CgroupScan scan_leaf_cgroups(const std::filesystem::path& root, std::size_t max_cgroups) {
  return scan_cgroups(root, {}, max_cgroups);
}

}  // namespace hwperf::cgroup
