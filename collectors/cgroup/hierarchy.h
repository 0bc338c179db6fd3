// Where the kernel's perf_event cgroup controller looks: cgroup v2 (hierarchy id 0 in
// /proc/cgroups) or a v1 perf_event mount. Read only; nothing is ever mounted.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace hwperf::cgroup {

struct PerfEventHierarchy {
  enum class Kind { v2, v1, none };
  Kind kind = Kind::none;
  // Mount point as the host sees it (from mountinfo), e.g. /sys/fs/cgroup/unified on hybrid.
  std::string mount_point;
  // For Kind::none: why, and the remedy.
  std::string message;
};

// Pure: decides from the text of <procfs>/cgroups and <procfs>/self/mountinfo.
PerfEventHierarchy detect_perf_event_hierarchy(std::string_view proc_cgroups,
                                               std::string_view mountinfo);

// Reads both files under procfs (Config::paths.procfs); a missing file gives Kind::none.
PerfEventHierarchy read_perf_event_hierarchy(const std::filesystem::path& procfs);

}  // namespace hwperf::cgroup
