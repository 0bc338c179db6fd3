#include "collectors/cgroup/hierarchy.h"

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

namespace hwperf::cgroup {
namespace {

std::vector<std::string> split_ws(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// mountinfo escapes space, tab, newline and backslash as \ooo (octal); see proc(5).
std::string unescape_octal(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '7' && s[i + 2] >= '0' &&
        s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
      out.push_back(
          static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

struct Mount {
  std::string mount_point, fstype, super_options;
};

std::vector<Mount> parse_mountinfo(std::string_view text) {
  std::vector<Mount> mounts;
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) {
    const auto fields = split_ws(line);
    // id parent major:minor root mount_point options [optional...] - fstype source super_options
    std::size_t dash = 0;
    for (std::size_t i = 6; i < fields.size(); ++i)
      if (fields[i] == "-") {
        dash = i;
        break;
      }
    if (dash == 0 || dash + 1 >= fields.size()) continue;
    Mount m;
    m.mount_point = unescape_octal(fields[4]);
    m.fstype = fields[dash + 1];
    m.super_options = dash + 3 < fields.size() ? fields[dash + 3] : "";
    mounts.push_back(std::move(m));
  }
  return mounts;
}

bool has_option(const std::string& options, std::string_view name) {
  std::istringstream in(options);
  for (std::string o; std::getline(in, o, ',');)
    if (o == name) return true;
  return false;
}

std::string read_all(const std::filesystem::path& p, bool& ok) {
  std::ifstream in(p);
  ok = static_cast<bool>(in);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

PerfEventHierarchy detect_perf_event_hierarchy(std::string_view proc_cgroups,
                                               std::string_view mountinfo,
                                               std::string_view prefer_under) {
  PerfEventHierarchy h;
  std::optional<long> hierarchy;
  bool enabled = true;
  std::istringstream in{std::string(proc_cgroups)};
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const auto f = split_ws(line);  // subsys_name hierarchy num_cgroups enabled
    if (f.size() >= 4 && f[0] == "perf_event") {
      hierarchy = std::stol(f[1]);
      enabled = f[3] != "0";
    }
  }
  auto mounts = parse_mountinfo(mountinfo);
  if (!prefer_under.empty()) {
    const std::string prefix = std::string(prefer_under) + "/";
    std::stable_partition(mounts.begin(), mounts.end(), [&prefix](const Mount& m) {
      return m.mount_point.compare(0, prefix.size(), prefix) == 0;
    });
  }
  for (const auto& m : mounts) {
    if (m.fstype == "cgroup2" || m.fstype == "cgroup")
      h.other_mount_points.push_back(m.mount_point);
  }
  const auto chosen = [&h](const std::string& mount_point) {
    h.other_mount_points.erase(
        std::remove(h.other_mount_points.begin(), h.other_mount_points.end(), mount_point),
        h.other_mount_points.end());
    h.mount_point = mount_point;
  };
  if (hierarchy && !enabled) {
    h.message =
        "the perf_event cgroup controller is disabled (cgroups file: enabled=0); "
        "boot without cgroup_disable=perf_event";
    return h;
  }
  // On a kernel without CONFIG_CGROUP_PERF perf_event is absent from /proc/cgroups.
  if (!hierarchy) {
    h.message =
        "the kernel has no perf_event cgroup controller (not listed in the cgroups file); "
        "per-cgroup counting needs CONFIG_CGROUP_PERF";
    return h;
  }
  if (*hierarchy == 0) {
    for (const auto& m : mounts)
      if (m.fstype == "cgroup2") {
        h.kind = PerfEventHierarchy::Kind::v2;
        chosen(m.mount_point);
        return h;
      }
    h.message =
        "perf_event is bound to cgroup v2 but no cgroup2 filesystem is mounted "
        "(mountinfo); mount the host's /sys (with /sys/fs/cgroup) read-only into the container";
    return h;
  }
  for (const auto& m : mounts)
    if (m.fstype == "cgroup" && has_option(m.super_options, "perf_event")) {
      h.kind = PerfEventHierarchy::Kind::v1;
      chosen(m.mount_point);
      return h;
    }
  h.message = "perf_event is bound to cgroup v1 hierarchy " + std::to_string(*hierarchy) +
              " but no cgroup filesystem with perf_event is mounted (mountinfo); mount the host's "
              "/sys/fs/cgroup read-only into the container";
  return h;
}

PerfEventHierarchy read_perf_event_hierarchy(const std::filesystem::path& procfs,
                                             std::string_view prefer_under) {
  bool ok_cgroups = false, ok_mountinfo = false;
  const auto cgroups = read_all(procfs / "cgroups", ok_cgroups);
  const auto mountinfo = read_all(procfs / "self" / "mountinfo", ok_mountinfo);
  if (!ok_cgroups || !ok_mountinfo) {
    PerfEventHierarchy h;
    h.message = "cannot read " + (procfs / (ok_cgroups ? "self/mountinfo" : "cgroups")).string() +
                "; check --path.procfs";
    return h;
  }
  return detect_perf_event_hierarchy(cgroups, mountinfo, prefer_under);
}

std::filesystem::path reachable_mount_point(const std::string& mount_point,
                                            const std::filesystem::path& sysfs) {
  const std::string sys = sysfs.generic_string();
  if (sys == "/sys" || mount_point.compare(0, sys.size() + 1, sys + "/") == 0) return mount_point;
  if (mount_point.compare(0, 5, "/sys/") == 0) return sysfs / mount_point.substr(5);
  return mount_point;
}

}  // namespace hwperf::cgroup
