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

// Every leaf below dir, as paths relative to root; dir itself when it has no sub-directory.
void walk(const std::filesystem::path& root, const std::filesystem::path& dir,
          std::vector<std::string>& leaves) {
  std::error_code ec;
  bool has_child = false;
  std::filesystem::directory_iterator it(dir, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    std::error_code tec;
    if (it->is_symlink(tec) || !it->is_directory(tec)) continue;
    has_child = true;
    walk(root, it->path(), leaves);
  }
  if (ec || has_child || dir == root) return;
  auto relative = std::filesystem::relative(dir, root, ec).generic_string();
  if (!ec) leaves.push_back(std::move(relative));
}

}  // namespace

CgroupScan scan_cgroups(const std::filesystem::path& root, const DiscoveryRules& rules,
                        std::size_t max_cgroups) {
  CgroupScan scan;
  std::vector<std::string> leaves;
  walk(root, root, leaves);
  std::sort(leaves.begin(), leaves.end());
  scan.roots.assign(rules.roots.size(), RootState::no_leaf);
  for (std::size_t i = 0; i < rules.roots.size(); ++i) {
    std::error_code ec;
    if (!std::filesystem::is_directory(root / rules.roots[i], ec))
      scan.roots[i] = RootState::missing;
  }
  for (auto& leaf : leaves) {
    CgroupIdentity id = identify_cgroup(leaf);
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
