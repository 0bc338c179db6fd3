#include "collectors/cgroup/cgroup_collector.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <set>
#include <system_error>
#include <utility>

#include "collectors/events/emission.h"
#include "collectors/metrics.h"
#include "common/cpu_list.h"
#include "common/enum_names.h"
#include "common/files.h"
#include "common/log.h"
#include "common/text.h"

namespace hwperf::cgroup {
namespace {

constexpr EnumName<ConfiguredRootState> kRootStateNames[] = {
    {ConfiguredRootState::counting, "counting"},
    {ConfiguredRootState::missing, "missing"},
    {ConfiguredRootState::no_leaf, "no_leaf"},
    {ConfiguredRootState::not_in_perf_event_hierarchy, "not_in_perf_event_hierarchy"},
};

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

void CgroupCollector::Counter::restart(perf::CounterGroup opened) {
  group = std::move(opened);
  auto first = group.read();
  last = first.ok() ? std::move(first.value) : perf::GroupReading{};
  totals.resize(group.size(), 0);
}

CgroupCollector::CgroupCollector(CgroupCollectorSettings settings)
    : settings_(std::move(settings)),
      plan_(perf::counting_plan(settings_.events, settings_.groups)),
      series_(events::series_at_level(settings_.granularity, settings_.cpus)) {
  for (const auto& pattern : settings_.match) {
    match_.emplace_back(pattern.regex, std::regex::ECMAScript | std::regex::optimize);
  }
  root_states_.assign(settings_.roots.size(), ConfiguredRootState::missing);
  online_.assign(settings_.cpus.size(), true);
  if (!settings_.unavailable.empty()) return;
  rescan();
  rescanner_.emplace(std::chrono::duration<double>(settings_.rescan_interval_seconds),
                     [this] { rescan(); });
}

int CgroupCollector::open(const std::string& relative, Counted& counted) {
  const auto directory = open_cgroup(settings_.root / relative);
  if (!directory.ok()) return directory.error;
  counted.counters.clear();
  counted.counters.reserve(plan_.units.size() * settings_.cpus.size());
  std::vector<bool> online;
  {
    std::lock_guard lock(mutex_);
    online = online_;
  }
  for (const auto& unit : plan_.units) {
    for (std::size_t index = 0; index < settings_.cpus.size(); ++index) {
      const HardwareThread& cpu = settings_.cpus[index];
      if (!online[index]) {
        counted.counters.emplace_back().totals.resize(unit.events.size(), 0);
        continue;
      }
      auto opened = open_cgroup_group(unit.events, directory.value, cpu.cpu);
      if (opened.error == ENODEV) {  // went offline since the online file was read
        counted.counters.emplace_back().totals.resize(unit.events.size(), 0);
        continue;
      }
      if (!opened.ok()) {
        counted.counters.clear();
        return opened.error;
      }
      counted.counters.emplace_back().restart(std::move(opened.value));
    }
  }
  return 0;
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
  std::vector<std::string> paths;
  {
    std::lock_guard lock(mutex_);
    was = online_;
    for (const auto& [path, counted] : counted_) paths.push_back(path);
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
  // New descriptors for the returned CPUs, opened outside the scrapes' lock.
  const std::size_t cpus = settings_.cpus.size();
  // path -> counter index -> group
  std::map<std::string, std::map<std::size_t, perf::CounterGroup>> reopened;
  for (const auto& path : paths) {
    const auto directory = open_cgroup(settings_.root / path);
    if (!directory.ok()) continue;  // gone: the rescan closes it
    for (std::size_t unit = 0; unit < plan_.units.size(); ++unit) {
      for (const std::size_t index : returned) {
        auto opened =
            open_cgroup_group(plan_.units[unit].events, directory.value, settings_.cpus[index].cpu);
        if (opened.ok()) reopened[path].emplace(unit * cpus + index, std::move(opened.value));
      }
    }
  }
  std::vector<perf::CounterGroup> closing;  // the lost groups, closed after the lock is released
  std::lock_guard lock(mutex_);
  online_ = online;
  for (auto& [path, groups] : reopened) {
    auto found = counted_.find(path);
    if (found == counted_.end()) continue;
    for (auto& [index, group] : groups) {
      Counter& counter = found->second.counters[index];
      closing.push_back(std::move(counter.group));
      counter.restart(std::move(group));
    }
  }
}

void CgroupCollector::rescan() {
  std::lock_guard rescan_lock(rescan_mutex_);
  follow_hotplug();
  DiscoveryRules rules;
  for (const auto& root : settings_.roots) rules.roots.push_back(root.path);
  rules.match = match_;
  rules.cgroupfs_runtime = settings_.cgroupfs_runtime;
  const CgroupScan scan = scan_cgroups(settings_.root, rules, settings_.max_cgroups);

  std::vector<ConfiguredRootState> root_states;
  for (std::size_t i = 0; i < settings_.roots.size(); ++i) {
    ConfiguredRootState state = ConfiguredRootState::counting;
    if (scan.roots[i] == RootState::no_leaf) state = ConfiguredRootState::no_leaf;
    if (scan.roots[i] == RootState::missing) {
      state = ConfiguredRootState::missing;
      for (const auto& other : settings_.other_roots) {
        std::error_code ec;
        if (std::filesystem::is_directory(other / settings_.roots[i].path, ec)) {
          state = ConfiguredRootState::not_in_perf_event_hierarchy;
        }
      }
    }
    root_states.push_back(state);
  }

  std::set<std::string> wanted;
  for (const auto& identity : scan.targets) wanted.insert(identity.cgroup);
  std::vector<std::string> to_open;
  {
    std::lock_guard lock(mutex_);
    for (const auto& identity : scan.targets) {
      if (counted_.count(identity.cgroup) == 0) to_open.push_back(identity.cgroup);
    }
  }
  // Opened outside the scrapes' lock: a rescan with many new cgroups never delays a scrape.
  std::map<std::string, Counted> opened;
  std::map<std::string, std::string> problems;
  for (const auto& identity : scan.targets) {
    if (!std::binary_search(to_open.begin(), to_open.end(), identity.cgroup)) continue;
    Counted counted;
    counted.identity = identity;
    const int error = open(identity.cgroup, counted);
    if (error == 0) {
      opened.emplace(identity.cgroup, std::move(counted));
    } else if (error != ENOENT) {  // ENOENT: removed since the walk
      problems.emplace(identity.cgroup, open_remedy(error));
    }
  }

  std::vector<Counted> closing;  // closed after the lock is released
  std::lock_guard lock(mutex_);
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
  for (std::size_t i = 0; i < root_states.size(); ++i) {
    if (root_states[i] == root_states_[i]) continue;
    const auto& root = settings_.roots[i];
    const std::string where = root.mark.line != 0 ? root.mark.to_string() + ": " : "";
    const std::string said = where + "collectors.cgroup.roots: /" + root.path + ": ";
    switch (root_states[i]) {
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
  root_states_ = std::move(root_states);
  if (scan.left_out_over_cap > 0 && !cap_logged_) {
    log::warn("cgroup: " + std::to_string(scan.left_out_over_cap) +
              " cgroups are not counted: collectors.cgroup.max_cgroups is " +
              std::to_string(settings_.max_cgroups) +
              "; hwperf_container_left_out{reason=\"over_cap\"} follows how many (said once)");
    cap_logged_ = true;
  }
  left_out_over_cap_ = scan.left_out_over_cap;
}

std::vector<FamilyDeclaration> CgroupCollector::declared_families() const {
  std::vector<FamilyDeclaration> declared;
  for (const auto& family : plan_.families) declared.push_back({family.name, family.where});
  return declared;
}

void CgroupCollector::collect(std::vector<prometheus::MetricFamily>& out) {
  auto available =
      make_gauge_family({"container", "available"},
                        "1 when containers are counted on this node; 0 when they cannot "
                        "be, with the reason (the log says what to do).");
  if (!settings_.unavailable.empty()) {
    // The label keeps the reason; the remedy after it is in the log.
    add_gauge(available,
              {{"reason", settings_.unavailable.substr(0, settings_.unavailable.find("; "))}}, 0.0);
    out.push_back(std::move(available));
    return;
  }
  add_gauge(available, {{"reason", ""}}, 1.0);
  out.push_back(std::move(available));
  const std::size_t cpus = settings_.cpus.size();
  std::vector<prometheus::MetricFamily> counts = perf::counter_families(plan_);
  auto group_enabled = make_counter_family(
      {"container", "group", "enabled", "seconds"},
      "Time the kernel had each event group enabled for the cgroup, summed over its CPUs (a "
      "cgroup event is enabled while the cgroup's tasks run on the CPU). Below enabled, running "
      "time means the group was multiplexed: all its counts are then scaled by the group's one "
      "running/enabled of each scrape interval.");
  auto group_running = make_counter_family(
      {"container", "group", "running", "seconds"},
      "Time each event group was really on the counters, all its events together, for the "
      "cgroup; rate(running) / rate(enabled) is the share counted, 1 unless multiplexed.");
  auto cgroups =
      make_gauge_family({"container", "cgroups"},
                        "Cgroups counted (leaves: containers, services and configured roots' "
                        "leaves).");
  auto left_out = make_gauge_family(
      {"container", "left_out"},
      "Cgroups discovery found but does not count: over_cap (collectors.cgroup.max_cgroups), "
      "open_failed (the log says why).");
  auto descriptors = make_gauge_family({"container", "open_counters"},
                                       "Perf event descriptors the cgroup collector holds open.");
  auto read_errors = make_counter_family(
      {"container", "read", "errors"}, "Counter reads that failed; their interval is not counted.");
  auto root_state = make_gauge_family(
      {"container", "root", "state"},
      "1 for each configured root's state: counting, missing, no_leaf, or "
      "not_in_perf_event_hierarchy (it exists only where the perf_event controller does not "
      "look, so its processes count nothing); the log says what to do.");
  auto hierarchy = make_gauge_family(
      {"container", "hierarchy", "info"},
      "The cgroup hierarchy the perf_event controller is bound to, which every count filters by.");

  std::lock_guard lock(mutex_);
  std::size_t open_counters = 0;
  std::vector<std::uint64_t> totals(plan_.counts * cpus);         // [count * cpus + cpu]
  std::vector<std::uint64_t> enabled(plan_.units.size() * cpus);  // [unit * cpus + cpu]
  std::vector<std::uint64_t> running(plan_.units.size() * cpus);
  for (auto& [path, counted] : counted_) {
    for (std::size_t slot = 0; slot < counted.counters.size(); ++slot) {
      Counter& counter = counted.counters[slot];
      const std::size_t unit = slot / cpus;
      if (counter.group.valid()) {
        auto reading = counter.group.read();  // the whole group in one read(2)
        if (reading.ok()) {
          const perf::GroupDelta delta = perf::delta_between(counter.last, reading.value);
          for (std::size_t i = 0; i < delta.counts.size(); ++i)
            counter.totals[i] += delta.counts[i];
          counter.enabled_ns += delta.enabled_ns;
          counter.running_ns += delta.running_ns;
          counter.last = std::move(reading.value);
        } else {
          ++read_errors_;
        }
        open_counters += counter.group.size();
      }
      // Invalid: its CPU has been offline since this cgroup was found; its totals stand.
      for (std::size_t i = 0; i < counter.totals.size(); ++i) {
        totals[(plan_.units[unit].first + i) * cpus + slot % cpus] = counter.totals[i];
      }
      enabled[slot] = counter.enabled_ns;
      running[slot] = counter.running_ns;
    }
    const CgroupIdentity& id = counted.identity;
    const Labels identity = {
        {"container_id", id.container_id}, {"pod_uid", id.pod_uid}, {"cgroup", id.cgroup}};
    const auto values = perf::value_totals(plan_, totals, cpus);
    for (std::size_t value = 0; value < plan_.events(); ++value) {
      Labels labels = identity;
      perf::add_group_label(labels, plan_.values[value]);
      events::add_series(counts[plan_.values[value].family], series_, values, value * cpus,
                         plan_.values[value].unit, labels);
    }
    for (std::size_t unit = 0; unit < plan_.units.size(); ++unit) {
      if (plan_.units[unit].group.empty()) continue;
      Labels labels = identity;
      labels.emplace_back("group", plan_.units[unit].group);
      events::add_series(group_enabled, series_, enabled, unit * cpus, events::Unit::nanoseconds,
                         labels);
      events::add_series(group_running, series_, running, unit * cpus, events::Unit::nanoseconds,
                         labels);
    }
  }
  add_gauge(cgroups, {}, static_cast<double>(counted_.size()));
  add_gauge(left_out, {{"reason", "over_cap"}}, static_cast<double>(left_out_over_cap_));
  add_gauge(left_out, {{"reason", "open_failed"}}, static_cast<double>(open_problems_.size()));
  add_gauge(descriptors, {}, static_cast<double>(open_counters));
  add_counter(read_errors, {}, read_errors_);
  for (std::size_t i = 0; i < settings_.roots.size(); ++i) {
    for (const auto& entry : kRootStateNames) {
      add_gauge(root_state, {{"root", "/" + settings_.roots[i].path}, {"state", entry.name}},
                entry.value == root_states_[i] ? 1.0 : 0.0);
    }
  }
  add_gauge(hierarchy,
            {{"version", settings_.hierarchy.kind == PerfEventHierarchy::Kind::v2 ? "v2" : "v1"},
             {"mount_point", settings_.hierarchy.mount_point}},
            1.0);
  for (auto& family : counts) out.push_back(std::move(family));
  if (!settings_.groups.empty()) {
    out.push_back(std::move(group_enabled));
    out.push_back(std::move(group_running));
  }
  for (auto* family : {&cgroups, &left_out, &descriptors, &read_errors}) {
    out.push_back(std::move(*family));
  }
  if (!settings_.roots.empty()) out.push_back(std::move(root_state));
  out.push_back(std::move(hierarchy));
}

}  // namespace hwperf::cgroup
