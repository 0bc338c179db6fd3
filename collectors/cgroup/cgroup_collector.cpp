#include "collectors/cgroup/cgroup_collector.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <set>
#include <stdexcept>
#include <system_error>
#include <utility>

#include "collectors/cgroup/cgroup_families.h"
#include "collectors/events/emission.h"
#include "collectors/metrics.h"
#include "common/cpu_list.h"
#include "common/enum_names.h"
#include "common/files.h"
#include "common/log.h"
#include "common/text.h"

namespace hwperf::cgroup {
namespace {

std::string open_remedy(int error) {
  if (error == EACCES || error == EPERM) {
    return errno_text(error) +
           "; a cgroup event counts per CPU, which needs CAP_PERFMON (or root) or "
           "kernel.perf_event_paranoid <= 0: run the exporter as root (--privileged in a "
           "container) or grant CAP_PERFMON";
  }
  if (error == EMFILE || error == ENFILE) {
    return errno_text(error) +
           "; raise the open-file limit (ulimit -n, systemd LimitNOFILE=) or lower "
           "collectors.cgroup.max_cgroups";
  }
  return errno_text(error);
}

}  // namespace

OrErrno<UniqueFd> open_cgroup(const std::filesystem::path& directory) {
  UniqueFd fd(::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return {UniqueFd{}, errno};
  return {std::move(fd), 0};
}

OrErrno<UniqueFd> open_cgroup_counter(const perf::EventEncoding& event, const UniqueFd& cgroup,
                                      unsigned cpu) {
  perf::OpenOptions options;
  options.cgroup = true;
  return perf::open_counter(event, cgroup.get(), static_cast<int>(cpu), options);
}

OrErrno<perf::CounterGroup> open_cgroup_group(const std::vector<perf::EventEncoding>& events,
                                              const UniqueFd& cgroup, unsigned cpu) {
  perf::OpenOptions options;
  options.cgroup = true;
  return perf::CounterGroup::open(events, cgroup.get(), static_cast<int>(cpu), options);
}

std::shared_ptr<const perf::CounterLayout> counter_layout(const perf::CountingPlan& plan,
                                                          const std::vector<HardwareThread>& cpus) {
  auto layout = std::make_shared<perf::CounterLayout>();
  for (const auto& unit : plan.units) layout->units.push_back(unit.events);
  for (const HardwareThread& cpu : cpus) layout->cpus.push_back(static_cast<int>(cpu.cpu));
  // A CPU that goes offline keeps its counters' totals; they are reopened when it returns.
  layout->cpus_come_and_go = true;
  return layout;
}

CgroupCollector::~CgroupCollector() = default;

CgroupCollector::CgroupCollector(CgroupCollectorSettings settings)
    : settings_(std::move(settings)),
      plan_(perf::counting_plan(settings_.events, settings_.groups)),
      layout_(counter_layout(plan_, settings_.cpus)),
      series_(events::series_at_level(settings_.configured.granularity, settings_.cpus)) {
  for (const auto& pattern : settings_.configured.match) {
    match_.emplace_back(pattern.regex, std::regex::ECMAScript | std::regex::optimize);
  }
  root_states_.assign(settings_.configured.roots.size(), ConfiguredRootState::missing);
  online_.assign(settings_.cpus.size(), true);
  Families available(plan_);
  add_available(available);
  for (const auto format : {ExpositionFormat::text_0_0_4, ExpositionFormat::openmetrics_1_0_0}) {
    append_families(available_text_[static_cast<std::size_t>(format)], {available.available},
                    format);
  }
  if (!settings_.unavailable.empty()) return;
  text_ = prepare_text({});
  if (settings_.mode == CountingMode::bpf) open_removed_before_discovery();
  rescan();
  rescanner_.emplace("cgroup: rescan",
                     std::chrono::duration<double>(settings_.configured.rescan_interval_seconds),
                     [this] { rescan(); });
}

int CgroupCollector::open(const std::string& relative, Counted& counted) {
  const auto directory = open_cgroup(settings_.root / relative);
  if (!directory.ok()) return directory.error;
  std::vector<bool> online;
  {
    std::lock_guard lock(mutex_);
    online = online_;
  }
  counted.counters = std::make_unique<perf::CounterSet>(layout_, *settings_.backend);
  const auto opening =
      counted.counters->open({perf::CountingTarget::cgroup(directory.value)}, online);
  counted.member = opening.member;
  return opening.error;
}

void CgroupCollector::open_removed_before_discovery() {
  Counted removed;
  removed.identity.cgroup = kRemovedBeforeDiscovery;
  const auto root = open_cgroup(settings_.root);
  int error = root.error;
  if (root.ok()) {
    removed.counters = std::make_unique<perf::CounterSet>(layout_, *settings_.backend);
    const auto opening =
        removed.counters->open({perf::CountingTarget::removed_under(root.value)}, online_);
    removed.member = opening.member;
    error = opening.error;
  }
  if (error != 0) {
    log::warn("cgroup: cannot count the cgroups removed before discovery: " + errno_text(error));
    return;
  }
  const auto& entry = counted_.emplace(kRemovedBeforeDiscovery, std::move(removed)).first->second;
  text_ = prepare_text({&entry.identity});
}

void CgroupCollector::follow_hotplug() {
  if (settings_.sysfs.empty()) return;
  const auto read = read_online_cpus(settings_.sysfs);
  if (!read) return;
  const std::vector<unsigned>& online_now = *read;
  std::vector<bool> online(settings_.cpus.size());
  for (std::size_t i = 0; i < settings_.cpus.size(); ++i) {
    online[i] = std::binary_search(online_now.begin(), online_now.end(), settings_.cpus[i].cpu);
  }
  std::vector<bool> was;
  {
    std::lock_guard lock(mutex_);
    was = online_;
    online_ = online;
  }
  if (online == was) return;
  std::vector<std::size_t> returned;
  for (std::size_t i = 0; i < online.size(); ++i) {
    if (online[i] == was[i]) continue;
    const std::string cpu = std::to_string(settings_.cpus[i].cpu);
    if (online[i]) {
      log::info("cgroup: CPU " + cpu + " is back online; its container counters are reopened");
      returned.push_back(i);
    } else {
      log::warn("cgroup: CPU " + cpu +
                " went offline; container counts on it pause until it returns");
    }
  }
  if (returned.empty()) return;
  std::vector<int> cpus;
  for (const std::size_t i : returned) cpus.push_back(static_cast<int>(settings_.cpus[i].cpu));
  bool shared = false;
  try {
    shared = settings_.backend->reopen_shared(cpus);
  } catch (const std::runtime_error& e) {
    log::warn(std::string("cgroup: ") + e.what() + "; container counts there stay paused");
    return;
  }
  // Only a rescan changes counted_, and this is one: scrapes read it meanwhile, and each set
  // swaps its new descriptors in under its own lock.
  for (auto& [path, counted] : counted_) {
    const bool removed = path == kRemovedBeforeDiscovery;  // counted under the root
    const auto directory = open_cgroup(removed ? settings_.root : settings_.root / path);
    if (!directory.ok()) continue;  // gone: the rescan closes it
    counted.counters->reopen(counted.member,
                             removed ? perf::CountingTarget::removed_under(directory.value)
                                     : perf::CountingTarget::cgroup(directory.value),
                             returned, shared);
  }
}

std::vector<ConfiguredRootState> CgroupCollector::root_states(const CgroupScan& scan) const {
  std::vector<ConfiguredRootState> states;
  for (std::size_t i = 0; i < settings_.configured.roots.size(); ++i) {
    ConfiguredRootState state = ConfiguredRootState::counting;
    if (scan.roots[i] == RootState::no_leaf) state = ConfiguredRootState::no_leaf;
    if (scan.roots[i] == RootState::missing) {
      state = ConfiguredRootState::missing;
      for (const auto& other : settings_.other_roots) {
        std::error_code ec;
        if (std::filesystem::is_directory(other / settings_.configured.roots[i].path, ec)) {
          state = ConfiguredRootState::not_in_perf_event_hierarchy;
        }
      }
    }
    states.push_back(state);
  }
  return states;
}

void CgroupCollector::log_root_states(const std::vector<ConfiguredRootState>& states) {
  for (std::size_t i = 0; i < states.size(); ++i) {
    if (states[i] == root_states_[i]) continue;
    const auto& root = settings_.configured.roots[i];
    const std::string where = root.mark.line != 0 ? root.mark.to_string() + ": " : "";
    const std::string said = where + "collectors.cgroup.roots: /" + root.path + ": ";
    switch (states[i]) {
      case ConfiguredRootState::counting: log::info(said + "counting its leaves"); break;
      case ConfiguredRootState::missing:
        log::warn(said + "no such cgroup under " + settings_.root.string() +
                  " (yet); it is counted once it exists");
        break;
      case ConfiguredRootState::no_leaf: break;
      case ConfiguredRootState::not_in_perf_event_hierarchy:
        log::warn(said +
                  "exists only in a hierarchy the perf_event controller does not filter by, "
                  "so its processes count nothing here; place them in " +
                  (settings_.root / root.path).string() + " (the " +
                  (settings_.hierarchy.kind == PerfEventHierarchy::Kind::v2
                       ? "cgroup v2"
                       : "cgroup v1 perf_event") +
                  " hierarchy) as well");
        break;
    }
  }
}

// Opened outside the scrapes' lock: a rescan with many new cgroups never delays a scrape. Only
// a rescan changes counted_, so it is looked at here without that lock.
std::map<std::string, CgroupCollector::Counted> CgroupCollector::open_new(
    const CgroupScan& scan, std::map<std::string, std::string>& problems) {
  std::map<std::string, Counted> opened;
  for (const auto& identity : scan.targets) {
    if (counted_.count(identity.cgroup) != 0) continue;
    Counted counted;
    counted.identity = identity;
    const int error = open(identity.cgroup, counted);
    if (error == 0) {
      opened.emplace(identity.cgroup, std::move(counted));
    } else if (error != ENOENT) {  // ENOENT: removed since the walk
      problems.emplace(identity.cgroup, open_remedy(error));
    }
  }
  return opened;
}

// The series' text of the cgroups counted from now on, made before the scrapes' lock too; null
// when they are those counted now.
std::unique_ptr<CgroupCollector::Text> CgroupCollector::next_text(
    const std::set<std::string>& wanted, const std::map<std::string, Counted>& opened) const {
  const bool gone = std::any_of(counted_.begin(), counted_.end(),
                                [&](const auto& entry) { return wanted.count(entry.first) == 0; });
  if (opened.empty() && !gone) return nullptr;
  std::map<std::string, const CgroupIdentity*> next;
  for (const auto& [path, counted] : counted_) {
    if (wanted.count(path) != 0) next.emplace(path, &counted.identity);
  }
  for (const auto& [path, counted] : opened) next.emplace(path, &counted.identity);
  std::vector<const CgroupIdentity*> identities;
  for (const auto& entry : next) identities.push_back(entry.second);
  return prepare_text(identities);
}

void CgroupCollector::rescan() {
  std::lock_guard rescan_lock(rescan_mutex_);
  follow_hotplug();
  DiscoveryRules rules;
  for (const auto& root : settings_.configured.roots) rules.roots.push_back(root.path);
  rules.match = match_;
  rules.cgroupfs_runtime = settings_.configured.runtime;
  const CgroupScan scan = scan_cgroups(settings_.root, rules, settings_.configured.max_cgroups);
  std::vector<ConfiguredRootState> states = root_states(scan);

  std::set<std::string> wanted;
  for (const auto& identity : scan.targets) wanted.insert(identity.cgroup);
  if (counted_.count(kRemovedBeforeDiscovery) != 0) wanted.insert(kRemovedBeforeDiscovery);
  std::map<std::string, std::string> problems;
  std::map<std::string, Counted> opened = open_new(scan, problems);
  std::unique_ptr<Text> text = next_text(wanted, opened);
  std::vector<Counted> closing;  // closed after the lock is released
  std::lock_guard lock(mutex_);
  if (text) text_ = std::move(text);
  for (auto it = counted_.begin(); it != counted_.end();) {
    if (wanted.count(it->first) == 0) {
      log::info("cgroup: " + it->first + " is gone; its counters are closed");
      closing.push_back(std::move(it->second));
      it = counted_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& [path, counted] : opened) {
    log::info(
        "cgroup: counting " + path +
        (counted.identity.container_id.empty() ? "" : " (" + counted.identity.container_id + ")"));
    counted_.emplace(path, std::move(counted));
  }
  for (const auto& [path, why] : problems) {
    if (open_problems_.count(path) == 0) {
      log::warn("cgroup: cannot count " + path + ": perf_event_open: " + why);
    }
  }
  open_problems_ = std::move(problems);
  log_root_states(states);
  root_states_ = std::move(states);
  if (scan.left_out_over_cap > 0 && !cap_logged_) {
    log::warn("cgroup: " + std::to_string(scan.left_out_over_cap) +
              " cgroups are not counted: collectors.cgroup.max_cgroups is " +
              std::to_string(settings_.configured.max_cgroups) +
              "; hwperf_container_left_out{reason=\"over_cap\"} follows how many (said once)");
    cap_logged_ = true;
  }
  left_out_over_cap_ = scan.left_out_over_cap;
}

}  // namespace hwperf::cgroup
