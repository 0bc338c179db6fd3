#include "collectors/uncore/resctrl.h"

#include <algorithm>
#include <array>
#include <set>
#include <utility>
#include <filesystem>

#include "collectors/metrics.h"
#include "common/files.h"
#include "common/text.h"

namespace hwperf::uncore {
namespace {
namespace fs = std::filesystem;

std::vector<std::string> subdirectories(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_directory(ec)) names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Opens <group_dir>/mon_data/mon_L3_NN/mbm_{total,local}_bytes; false with `problem` set when a
// domain maps to no package.
bool open_group(const std::string& group_dir, const std::string& group,
                const std::string& monitor_group, const std::map<unsigned, unsigned>& packages,
                ResctrlSource& source) {
  for (const std::string& domain : subdirectories(group_dir + "/mon_data")) {
    if (domain.rfind("mon_L3_", 0) != 0) continue;
    const auto id = parse_u64(domain.substr(7));
    const auto package = id ? packages.find(static_cast<unsigned>(*id)) : packages.end();
    if (package == packages.end()) {
      source.reason = "unusable";
      source.detail = group_dir + "/mon_data/" + domain +
                      ": no L3 cache of the topology has this id "
                      "(devices/system/cpu/cpu*/cache/index3/id)";
      return false;
    }
    for (bool local : {false, true}) {
      const std::string path =
          group_dir + "/mon_data/" + domain + (local ? "/mbm_local_bytes" : "/mbm_total_bytes");
      auto fd = open_attribute(path);
      if (!fd.ok()) continue;  // an L3 without this event (local is optional)
      source.counters.push_back(
          {group, monitor_group, package->second, local, path, std::move(fd.value)});
    }
  }
  return true;
}

}  // namespace

std::map<unsigned, unsigned> l3_packages(const std::string& sysfs_root, const Topology& topology) {
  std::map<unsigned, unsigned> packages;
  for (const Cache& cache : topology.caches()) {
    if (cache.level != 3 || cache.cpus.empty()) continue;
    const unsigned cpu = cache.cpus.front();
    const auto id = read_u64_file(sysfs_root + "/devices/system/cpu/cpu" + std::to_string(cpu) +
                                  "/cache/index3/id");
    const HardwareThread* thread = topology.find(cpu);
    if (id.ok() && thread != nullptr) packages[static_cast<unsigned>(id.value)] = thread->package;
  }
  return packages;
}

ResctrlSource open_resctrl(const std::string& sysfs_root,
                           const std::map<unsigned, unsigned>& l3_to_package) {
  ResctrlSource source;
  const std::string root = sysfs_root + "/fs/resctrl";
  // A mounted resctrl always has info/; the empty mount point sysfs provides has nothing.
  if (!fs::is_directory(root + "/info")) {
    source.reason = "not_mounted";
    source.detail = root + " is not mounted: " + kResctrlMountHint;
    return source;
  }
  if (!fs::is_directory(root + "/mon_data")) {
    source.reason = "absent";
    source.detail = root +
                    " has no mon_data: this CPU (or the mount options) offers no resctrl "
                    "monitoring";
    return source;
  }
  source.reason = "ok";
  source.detail.clear();
  // The default group, its monitoring groups, then each control group (a directory with
  // mon_data beside info/, mon_data and mon_groups) and its monitoring groups.
  std::vector<std::pair<std::string, std::string>> groups = {{"/", root}};
  for (const std::string& name : subdirectories(root)) {
    if (name == "info" || name == "mon_data" || name == "mon_groups") continue;
    if (fs::is_directory(root + "/" + name + "/mon_data")) {
      groups.emplace_back(name, root + "/" + name);
    }
  }
  for (const auto& [group, dir] : groups) {
    bool mapped = open_group(dir, group, "", l3_to_package, source);
    for (const std::string& monitor : subdirectories(dir + "/mon_groups")) {
      mapped = mapped &&
               open_group(dir + "/mon_groups/" + monitor, group, monitor, l3_to_package, source);
    }
    if (!mapped) {
      source.counters.clear();  // a package short of a domain would be a wrong number
      return source;
    }
  }
  if (source.counters.empty()) {
    source.reason = "absent";
    source.detail = root +
                    "/mon_data has no mon_L3_*/mbm_total_bytes: no memory bandwidth "
                    "monitoring on this CPU";
  }
  return source;
}

ResctrlFamilies::ResctrlFamilies()
    : families_{make_counter_family({"resctrl", "memory", "bytes"},
                                    "Memory traffic of the resctrl control group's tasks "
                                    "(mbm_total_bytes, summed over the package's L3 domains) "
                                    "since the kernel started counting the group."),
                make_counter_family({"resctrl", "local", "memory", "bytes"},
                                    "The part of that traffic to the package's local memory "
                                    "(mbm_local_bytes)."),
                make_counter_family({"resctrl", "monitor", "group", "memory", "bytes"},
                                    "Memory traffic of a monitoring group's tasks (mbm_total_bytes "
                                    "under mon_groups/), part of its control group's."),
                make_counter_family({"resctrl", "monitor", "group", "local", "memory", "bytes"},
                                    "The part of a monitoring group's traffic to local memory.")} {}

void ResctrlFamilies::collect(const std::vector<ResctrlCounter>& counters,
                              std::vector<prometheus::MetricFamily>& out) const {
  // (family, labels) -> bytes; a key with an unreadable file ("Unavailable") is left out.
  std::map<std::pair<std::size_t, Labels>, std::uint64_t> totals;
  std::set<std::pair<std::size_t, Labels>> failed;
  for (const ResctrlCounter& counter : counters) {
    const std::size_t family = (counter.monitor_group.empty() ? 0 : 2) + (counter.local ? 1 : 0);
    Labels labels = {{"group", counter.group}};
    if (!counter.monitor_group.empty()) labels.emplace_back("monitor_group", counter.monitor_group);
    labels.emplace_back("package", std::to_string(counter.package));
    auto key = std::make_pair(family, std::move(labels));
    const auto value = pread_counter(counter.fd);
    if (!value.ok()) {
      failed.insert(std::move(key));
      continue;
    }
    totals[key] += value.value;
  }
  std::array<prometheus::MetricFamily, 4> families = families_;
  for (const auto& [key, total] : totals) {
    if (failed.count(key) == 0) add_counter(families[key.first], key.second, total);
  }
  for (auto& family : families) append_unless_empty(out, std::move(family));
}

}  // namespace hwperf::uncore
