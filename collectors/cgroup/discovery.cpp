#include "collectors/cgroup/discovery.h"

#include <algorithm>
#include <string>
#include <system_error>

namespace hwperf::cgroup {
namespace {

bool recognised(const CgroupIdentity& id) {
  const auto& c = id.cgroup;
  return !id.container_id.empty() || (c.size() > 8 && c.compare(c.size() - 8, 8, ".service") == 0);
}

bool under(const std::string& path, const std::string& root) {
  return root.empty() || path == root ||
         (path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
          path[root.size()] == '/');
}

// Every leaf below dir (`relative` to the hierarchy root), dir itself when it has no
// sub-directory. readdir's d_type says which entries are directories, so a directory of a few
// dozen control files costs one getdents, not a stat per file.
void walk(const std::filesystem::path& dir, const std::string& relative,
          std::vector<std::string>& leaves) {
  std::error_code ec;
  bool has_child = false;
  std::filesystem::directory_iterator it(dir, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    std::error_code type_error;
    if (!it->is_directory(type_error) || it->is_symlink(type_error)) continue;
    has_child = true;
    const std::string name = it->path().filename().string();
    walk(it->path(), relative.empty() ? name : relative + "/" + name, leaves);
  }
  if (ec || has_child || relative.empty()) return;
  leaves.push_back(relative);
}

}  // namespace

CgroupScan scan_cgroups(const std::filesystem::path& root, const DiscoveryRules& rules,
                        std::size_t max_cgroups) {
  CgroupScan scan;
  std::vector<std::string> leaves;
  walk(root, "", leaves);
  std::sort(leaves.begin(), leaves.end());
  scan.roots.assign(rules.roots.size(), RootState::no_leaf);
  for (std::size_t i = 0; i < rules.roots.size(); ++i) {
    std::error_code ec;
    if (!std::filesystem::is_directory(root / rules.roots[i], ec))
      scan.roots[i] = RootState::missing;
  }
  for (auto& leaf : leaves) {
    CgroupIdentity id = identify_cgroup(leaf, rules.cgroupfs_runtime);
    if (id.monitor) continue;  // no container, whatever root or pattern takes it
    bool counted = recognised(id);
    for (std::size_t i = 0; i < rules.roots.size(); ++i) {
      if (under(leaf, rules.roots[i])) {
        counted = true;
        scan.roots[i] = RootState::counting;
      }
    }
    for (const auto& pattern : rules.match) {
      if (!counted && std::regex_search(leaf, pattern)) counted = true;
    }
    if (counted) scan.targets.push_back(std::move(id));
  }
  if (scan.targets.size() > max_cgroups) {
    scan.left_out_over_cap = scan.targets.size() - max_cgroups;
    scan.targets.resize(max_cgroups);
  }
  return scan;
}

}  // namespace hwperf::cgroup
