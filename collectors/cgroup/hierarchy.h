// Where the kernel's perf_event cgroup controller looks: cgroup v2 (hierarchy id 0 in
// /proc/cgroups) or a v1 perf_event mount. Read only; nothing is ever mounted.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace hwperf::cgroup {

struct PerfEventHierarchy {
  enum class Kind { v2, v1, none };
  Kind kind = Kind::none;
  // Mount point as the host sees it (from mountinfo), e.g. /sys/fs/cgroup/unified on hybrid.
  std::string mount_point;
  // For Kind::none: why, and the remedy.
  std::string message;
  // The other cgroup hierarchies mounted (v1 controllers, or cgroup2 when perf_event is in v1):
  // a cgroup that exists only there is never counted, which the collector says.
  std::vector<std::string> other_mount_points;
};

// Pure: decides from the text of <procfs>/cgroups and <procfs>/self/mountinfo. Where the hierarchy
// is mounted twice (a container that sees its own /sys/fs/cgroup and the host's under /host/sys),
// the mount under `prefer_under` (--path.sysfs) is taken.
PerfEventHierarchy detect_perf_event_hierarchy(std::string_view proc_cgroups,
                                               std::string_view mountinfo,
                                               std::string_view prefer_under = {});

// Reads both files under procfs (Config::paths.procfs); a missing file gives Kind::none.
PerfEventHierarchy read_perf_event_hierarchy(const std::filesystem::path& procfs,
                                             std::string_view prefer_under = {});

// The directory to walk for a mount point read from mountinfo: as is, or moved under `sysfs`
// when the exporter reads another /sys (a fixture tree, or the host's at /host/sys where the
// mount itself is not visible).
std::filesystem::path reachable_mount_point(const std::string& mount_point,
                                            const std::filesystem::path& sysfs);

}  // namespace hwperf::cgroup
