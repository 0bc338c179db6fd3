#include "collectors/cgroup/discovery.h"

#include <algorithm>
#include <string>
#include <system_error>

namespace hwperf::cgroup {
namespace {

bool eligible(const CgroupIdentity& id) {
  const auto& c = id.cgroup;
  return !id.container_id.empty() || (c.size() > 8 && c.compare(c.size() - 8, 8, ".service") == 0);
}

void walk(const std::filesystem::path& root, const std::filesystem::path& dir,
          std::vector<CgroupIdentity>& out) {
  std::error_code ec;
  bool has_child = false;
  std::filesystem::directory_iterator it(dir, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    std::error_code tec;
    if (it->is_symlink(tec) || !it->is_directory(tec)) continue;
    has_child = true;
    walk(root, it->path(), out);
  }
  if (ec || has_child || dir == root) return;
  auto id = identify_cgroup(std::filesystem::relative(dir, root, ec).generic_string());
  if (!ec && eligible(id)) out.push_back(std::move(id));
}

}  // namespace

CgroupScan scan_leaf_cgroups(const std::filesystem::path& root, std::size_t max_cgroups) {
  CgroupScan scan;
  walk(root, root, scan.targets);
  std::sort(scan.targets.begin(), scan.targets.end(),
            [](const CgroupIdentity& a, const CgroupIdentity& b) { return a.cgroup < b.cgroup; });
  if (scan.targets.size() > max_cgroups) {
    scan.left_out_over_cap = scan.targets.size() - max_cgroups;
    scan.targets.resize(max_cgroups);
  }
  return scan;
}

}  // namespace hwperf::cgroup
