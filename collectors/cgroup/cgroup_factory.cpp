#include "collectors/cgroup/cgroup_collector.h"

#include "collectors/cgroup/cgroup_config.h"

#include <stdexcept>

#include "collectors/cgroup/cgroup_registration.h"
#include "collectors/cgroup/counting_mode.h"
#include "collectors/events/event_specs.h"
#include "collectors/events/groups.h"
#include "collectors/perf/perf_event.h"
#include "collectors/perf/pfm_encoder.h"
#include "common/log.h"
#include "common/text.h"
#include "config/errors.h"

namespace hwperf::cgroup {
namespace {

struct Located {
  PerfEventHierarchy hierarchy;
  std::filesystem::path root;
  std::vector<std::filesystem::path> other_roots;
};

Located locate(const Config& config) {
  Located located;
  located.hierarchy = read_perf_event_hierarchy(config.paths.procfs, config.paths.sysfs);
  if (located.hierarchy.kind == PerfEventHierarchy::Kind::none) {
    throw std::runtime_error("cgroup: cannot count containers: " + located.hierarchy.message);
  }
  located.root = reachable_mount_point(located.hierarchy.mount_point, config.paths.sysfs);
  std::error_code ec;
  if (!std::filesystem::is_directory(located.root, ec)) {
    throw std::runtime_error("cgroup: the perf_event hierarchy (" + located.hierarchy.mount_point +
                             ") is not reachable at " + located.root.string() +
                             "; mount the host's /sys read-only and give its path with "
                             "--path.sysfs");
  }
  for (const auto& other : located.hierarchy.other_mount_points) {
    located.other_roots.push_back(reachable_mount_point(other, config.paths.sysfs));
  }
  return located;
}

// Counted when the configuration lists no events: best effort, what this machine cannot count is
// dropped with one warning. CPU time first: the energy rules split power by it.
std::vector<EventSpec> default_cgroup_events() {
  return events::events_from_names(
      {"perf::CPU-CLOCK", "perf::INSTRUCTIONS", "perf::CYCLES", "perf::CACHE-MISSES"});
}

// What is counted is exactly what was listed: with groups but no events, no ungrouped events;
// with neither, the default events (containers have no default groups).
std::vector<EventSpec> cgroup_events(const CgroupCollectorConfig& cgroup) {
  if (cgroup.events_given) return cgroup.events;
  if (cgroup.groups_given) return {};
  return default_cgroup_events();
}

std::vector<events::GroupDefinition> cgroup_groups(const Config& config) {
  return events::group_definitions(config.get<CgroupCollectorConfig>().groups, true, {},
                                   config.get<GroupsConfig>().groups, "collectors.cgroup.groups");
}

// Descriptors per cgroup and CPU: each ungrouped event and each member of a group.
std::size_t event_count(const Config& config) {
  std::size_t events = cgroup_events(config.get<CgroupCollectorConfig>()).size();
  for (const auto& group : cgroup_groups(config)) events += group.members.size();
  return events;
}

}  // namespace

namespace {

// Problems of the node, not of the configuration: thrown inside the factory, turned into an
// unavailable collector by make_cgroup_collector.
struct Unavailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

CgroupCollectorSettings counting_settings(const Config& config, const Topology& topology,
                                          const events::PresetCatalog& presets) {
  const auto& cgroup = config.get<CgroupCollectorConfig>();
  Located located;
  try {
    located = locate(config);
  } catch (const std::runtime_error& e) {
    throw Unavailable(e.what());
  }
  try {
    perf::initialize_pfm();
  } catch (const std::runtime_error& e) {
    throw Unavailable(std::string("cgroup: ") + e.what());
  }
  // A cgroup event counts per CPU: the kernel asks more of it than of counting one's own tasks
  // (kernel/events/core.c: perf_event_open -> perf_allow_cpu), so it is tried here, and every
  // group is probed as a cgroup group: some software events (perf::TASK-CLOCK) count tasks only.
  const auto directory = open_cgroup(located.root);
  if (!directory.ok()) {
    throw Unavailable("cgroup: " + located.root.string() + ": " + errno_text(directory.error));
  }
  const unsigned first_cpu = topology.threads().front().cpu;
  // The CPU time every node has, so that a missing privilege is not blamed on an event.
  const int probe = open_cgroup_counter(perf::encode_event("perf::CPU-CLOCK", CountingDomain::all),
                                        directory.value, first_cpu)
                        .error;
  if (probe != 0) {
    throw Unavailable(
        "cgroup: perf_event_open of a cgroup event on " + located.root.string() + ": " +
        errno_text(probe) +
        (probe == EACCES || probe == EPERM
             ? "; a cgroup event counts per CPU, which " +
                   perf::system_wide_permission_remedy(perf::paranoid_setting(config.paths.procfs))
             : ""));
  }

  perf::EventRequest request;
  request.configured = cgroup_events(cgroup);
  request.defaults = !cgroup.events_given && !cgroup.groups_given;
  request.groups = cgroup_groups(config);
  request.open_group = [&](const std::vector<perf::EventEncoding>& events) {
    return open_cgroup_group(events, directory.value, first_cpu);
  };
  request.presets = &presets;
  request.procfs = config.paths.procfs;
  request.level = "container";
  request.collector = "cgroup";
  request.config_path = "collectors.cgroup.events";
  request.counted_for = "Counted for each container cgroup";
  request.scope = "summed over the CPUs of each package (or the machine)";
  perf::ResolvedEvents resolved;
  try {
    resolved = perf::resolve_counted_events(request);
  } catch (const ConfigError&) {
    throw;  // an event the user listed: their mistake, exit 2
  } catch (const std::runtime_error& e) {
    throw Unavailable(e.what());
  }
  CgroupCollectorSettings settings;
  settings.cpus = topology.threads();
  // The mode, decided once the events are: bpf mode throws what it misses (a startup error).
  const ChosenMode chosen = choose_mode(
      config, located.hierarchy,
      counter_layout(perf::counting_plan(resolved.events, resolved.groups), settings.cpus));
  log::info(chosen.said);
  settings.mode = chosen.mode;
  settings.mode_reason = chosen.reason;
  settings.engine = chosen.backend;
  if (settings.engine) settings.backend = settings.engine.get();
  settings.hierarchy = located.hierarchy;
  settings.root = located.root;
  settings.other_roots = located.other_roots;
  settings.sysfs = config.paths.sysfs;
  settings.events = std::move(resolved.events);
  settings.groups = std::move(resolved.groups);
  settings.group_lines = std::move(resolved.group_lines);
  settings.configured = cgroup;
  return settings;
}

}  // namespace

std::unique_ptr<CgroupCollector> make_cgroup_collector(const Config& config,
                                                       const Topology& topology,
                                                       const events::PresetCatalog& presets) {
  try {
    return std::make_unique<CgroupCollector>(counting_settings(config, topology, presets));
  } catch (const Unavailable& e) {
    log::error(std::string(e.what()) +
               "; exporting hwperf_container_available 0 and no container counts, the other "
               "collectors keep serving");
    CgroupCollectorSettings settings;
    settings.unavailable = e.what();
    return std::make_unique<CgroupCollector>(std::move(settings));
  }
}

// The registry entry (registration.h): built only through the factory above.
namespace {

// Descriptors at the cap: max_cgroups x events x CPUs; the engine's, whatever the cgroups.
FileNeed file_need(const Config& config, const Topology& topology) {
  const auto& cgroup = config.get<CgroupCollectorConfig>();
  const std::size_t events = event_count(config);
  const std::size_t cpus = topology.threads().size();
  if (const auto engine = engine_descriptors(config, events, cpus)) {
    return {"cgroup (BPF engine): (" + std::to_string(events) + " events + 1) x " +
                std::to_string(cpus) + " CPUs and its maps and programs",
            *engine};
  }
  return {"cgroup: up to " + std::to_string(cgroup.max_cgroups) + " cgroups x " +
              std::to_string(events) + " events x " + std::to_string(cpus) + " CPUs",
          static_cast<unsigned long>(cgroup.max_cgroups * events * cpus),
          "collectors.cgroup.max_cgroups"};
}

// The event families (hwperf_container_*), for the family-name check across collectors.
std::vector<FamilyDeclaration> families(const Config& config, const Topology&) {
  return configured_families(cgroup_events(config.get<CgroupCollectorConfig>()),
                             cgroup_groups(config), "container");
}

// The --check-config lines: the hierarchy and what discovery finds now.
std::vector<std::string> cgroup_check_report(const Config& config, const Topology&) {
  const auto& cgroup = config.get<CgroupCollectorConfig>();
  const Located located = locate(config);
  DiscoveryRules rules;
  for (const auto& root : cgroup.roots) rules.roots.push_back(root.path);
  for (const auto& pattern : cgroup.match) rules.match.emplace_back(pattern.regex);
  rules.cgroupfs_runtime = cgroup.runtime;
  const CgroupScan scan = scan_cgroups(located.root, rules, cgroup.max_cgroups);
  std::vector<std::string> lines;
  lines.push_back(
      std::string("perf_event hierarchy: ") +
      (located.hierarchy.kind == PerfEventHierarchy::Kind::v2 ? "cgroup v2" : "cgroup v1") +
      " at " + located.root.string());
  lines.push_back("cgroups found now: " + std::to_string(scan.targets.size()) +
                  (scan.left_out_over_cap > 0
                       ? " (" + std::to_string(scan.left_out_over_cap) + " more over max_cgroups)"
                       : ""));
  for (const auto& identity : scan.targets) {
    lines.push_back(
        "cgroup " + identity.cgroup +
        (identity.container_id.empty() ? "" : " container_id=" + identity.container_id));
  }
  return lines;
}

bool enabled(const Config& config) { return config.get<CgroupCollectorConfig>().enabled; }
std::vector<std::string> check(const Config& config, const Topology& topology,
                               const CollectorServices& services) {
  // Building it finds the hierarchy and probes a cgroup event, which is what --check-config is for.
  auto collector = make_cgroup_collector(config, topology, services.presets);
  if (!collector->unavailable().empty()) {
    return {"NOT available: " + collector->unavailable() + " (the exporter serves without it)"};
  }
  auto lines = cgroup_check_report(config, topology);
  lines.push_back(collector->mode_line());
  for (auto& line : perf::event_lines(collector->events())) lines.push_back(std::move(line));
  for (const auto& line : collector->group_lines()) lines.push_back(line);
  return lines;
}

// Container families are summed per container (the package label, where counted, is summed away).
std::vector<events::RuleScope> rule_scopes(const Config& config) {
  events::RuleScope scope;
  scope.family_level = "container";
  scope.levels = {{"instance_container", {"container_id", "pod_uid", "cgroup"}}};
  scope.groups = cgroup_groups(config);
  return {scope};
}

}  // namespace

}  // namespace hwperf::cgroup

namespace hwperf {

CollectorEntry cgroup_collector_entry() {
  return CollectorEntry("cgroup", &cgroup_settings_keys, &cgroup::enabled,
                        &make_with_presets<&cgroup::make_cgroup_collector>, &cgroup::check)
      .with_files(&cgroup::file_need)
      .with_rule_scopes(&cgroup::rule_scopes)
      .with_families(&cgroup::families)
      .counts_system_wide();
}

}  // namespace hwperf
