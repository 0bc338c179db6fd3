// One synchronous pass over a cgroup hierarchy: the leaf container scopes and systemd services
// to count. (The background thread that repeats it every rescan_interval is not written yet.)
#pragma once

#include <cstddef>
#include <filesystem>
#include <vector>

#include "collectors/cgroup/identity.h"

namespace hwperf::cgroup {

struct CgroupScan {
  // Sorted by cgroup path; at most max_cgroups of them.
  std::vector<CgroupIdentity> targets;
  // Eligible leaves left out because of max_cgroups.
  std::size_t left_out_over_cap = 0;
};

// root is the hierarchy's mount point as this process sees it (under --path.sysfs). Only leaves
// (directories without sub-directories) are taken: a perf cgroup event counts descendants too, so
// opening a parent and its child would count twice. A directory vanishing mid-walk is skipped.
CgroupScan scan_leaf_cgroups(const std::filesystem::path& root, std::size_t max_cgroups);

}  // namespace hwperf::cgroup
