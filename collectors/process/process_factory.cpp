#include "collectors/process/process_collector.h"

#include "collectors/process/process_config.h"

#include <algorithm>
#include <cerrno>
#include <map>
#include <set>
#include <stdexcept>

#include "collectors/process/process_registration.h"
#include "collectors/events/event_specs.h"
#include "collectors/events/groups.h"
#include "collectors/metrics.h"
#include "collectors/perf/counted_events.h"
#include "collectors/perf/pfm_encoder.h"
#include "common/log.h"
#include "common/sysctl.h"
#include "common/text.h"
#include "config/errors.h"

namespace hwperf::process {
namespace {

void check_pidfiles(const ProcessCollectorConfig& config) {
  std::vector<std::string> problems;
  for (const auto& target : config.targets) {
    if (target.selector != ProcessTargetConfig::Selector::pidfile) continue;
    const auto read = read_pidfile(target.pidfile);
    if (read.error == 0) continue;
    problems.push_back(target.mark.to_string() + ": collectors.process.targets: " + target.name +
                       ": pidfile " + target.pidfile + ": " +
                       (read.error == EINVAL ? std::string("does not hold one process id")
                                             : errno_text(read.error)) +
                       "; start the service first, or fix the path (the exporter reads it "
                       "again whenever its process is gone)");
  }
  if (!problems.empty()) throw ConfigError(problems);
}

}  // namespace

std::vector<std::string> default_group_names() { return {"software", "ipc", "branch", "cache"}; }

std::vector<events::GroupDefinition> process_groups(const Config& config) {
  const auto& process = config.get<ProcessCollectorConfig>();
  return events::group_definitions(process.groups, process.groups_given || process.events_given,
                                   default_group_names(), config.get<GroupsConfig>().groups,
                                   "collectors.process.groups");
}

namespace {

// What is counted is exactly what was listed: events alone, groups alone, or both; with neither,
// the default groups and no ungrouped events.
std::vector<EventSpec> process_events(const ProcessCollectorConfig& process) {
  return process.events_given ? process.events : std::vector<EventSpec>{};
}

// What the marker library counts per region: the targets' events, each one counter; a preset
// derived from several native events is left out, said once.
std::vector<region::RegionEvent> regions_count(const ProcessCollectorSettings& settings) {
  std::vector<perf::CountedEvent> counted;
  std::vector<std::string> derived;
  auto add = [&](const perf::CountedEvent& event) {
    if (event.derived.empty()) {
      counted.push_back(event);
    } else if (std::find(derived.begin(), derived.end(), event.event) == derived.end()) {
      derived.push_back(event.event);
    }
  };
  for (const auto& event : settings.events) add(event);
  for (const auto& group : settings.groups) {
    for (const auto& member : group.members) add(member);
  }
  if (!derived.empty()) {
    log::warn("process: regions do not count " + join(derived) +
              ": each is a sum of native events, and the marker library counts each event as "
              "one counter; list its native events to count them per region");
  }
  return region::region_events(counted);
}

}  // namespace

std::unique_ptr<ProcessCollector> make_process_collector(const Config& config,
                                                         const Topology& topology,
                                                         const events::PresetCatalog& presets) {
  const auto& process = config.get<ProcessCollectorConfig>();
  try {
    perf::initialize_pfm();
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(std::string("process: ") + e.what());
  }
  check_pidfiles(process);
  perf::EventRequest request;
  request.configured = process_events(process);
  request.groups = process_groups(config);
  request.default_groups = !process.groups_given && !process.events_given;
  request.presets = &presets;
  request.domain = process.domain;
  request.procfs = config.paths.procfs;
  request.level = "process";
  request.collector = "process";
  request.config_path = "collectors.process.events";
  request.counted_for = "Counted for each process target";
  perf::ResolvedEvents resolved = perf::resolve_counted_events(request);
  ProcessCollectorSettings settings;
  settings.procfs = config.paths.procfs;
  settings.targets = process.targets;
  settings.events = std::move(resolved.events);
  settings.groups = std::move(resolved.groups);
  settings.group_lines = std::move(resolved.group_lines);
  settings.rescan_interval_seconds = process.rescan_interval_seconds;
  settings.domain = resolved.domain;
  settings.domain_note = resolved.domain_note;
  if (process.per_cpu) {
    settings.cpus = topology.threads();
  }
  const bool command_regions =
      std::any_of(process.targets.begin(), process.targets.end(),
                  [](const ProcessTargetConfig& target) { return target.regions_fd >= 0; });
  settings.regions = process.regions;
  if (process.regions || command_regions) settings.region_events = regions_count(settings);
  return std::make_unique<ProcessCollector>(std::move(settings));
}

// The registry entry (registration.h): built only through the factory above.
namespace {

// Descriptors the targets need now: threads of the processes they select x events (ungrouped
// and every member of a group: each is a descriptor) x CPU slots. Default groups are counted
// whole, though this machine may not count them all.
FileNeed file_need(const Config& config, const Topology& topology) {
  const auto& process = config.get<ProcessCollectorConfig>();
  std::size_t events = process_events(process).size();
  for (const auto& group : process_groups(config)) events += group.members.size();
  const std::size_t slots = process.per_cpu ? topology.threads().size() : 1;
  Snapshot snapshot;
  for (auto& stat : read_all_proc_stats(config.paths.procfs)) {
    const pid_t pid = stat.identity.pid;
    snapshot.processes.emplace(pid, std::move(stat));
  }
  ProcessFacts facts;
  facts.exe = [&](pid_t pid) { return read_exe(config.paths.procfs, pid); };
  facts.cmdline = [&](pid_t pid) { return read_cmdline(config.paths.procfs, pid); };
  std::size_t threads = 0;
  std::string chosen_at;
  for (const auto& target : process.targets) {
    if (target.mark.line != 0) {
      chosen_at += (chosen_at.empty() ? "" : ", ") + target.mark.to_string() +
                   ": collectors.process.targets: " + target.name;
    }
    TargetPlan plan(target);
    std::optional<PidfileReading> pidfile;
    if (target.selector == ProcessTargetConfig::Selector::pidfile) {
      const auto read = read_pidfile(target.pidfile);
      pidfile = PidfileReading{read.pid, read.error, std::nullopt};
    }
    for (const auto& selected : plan.update(snapshot, facts, pidfile).attach) {
      threads += list_threads(config.paths.procfs, selected.identity.pid).size();
    }
  }
  const std::size_t count = threads * events * slots;
  return {"process targets: " + std::to_string(threads) + " threads x " + std::to_string(events) +
              " events x " + std::to_string(slots) + (slots == 1 ? " CPU slot" : " CPUs"),
          static_cast<unsigned long>(count), chosen_at.empty() ? "collectors.process" : chosen_at};
}

// The event families (hwperf_process_*), for the family-name check across collectors.
std::vector<FamilyDeclaration> families(const Config& config, const Topology&) {
  return configured_families(process_events(config.get<ProcessCollectorConfig>()),
                             process_groups(config), "process");
}

// The --check-config lines: each target, its selector and what it selects now.
std::vector<std::string> process_check_report(const Config& config, const Topology&) {
  std::vector<std::string> lines;
  for (const auto& target : config.get<ProcessCollectorConfig>().targets) {
    std::string selector;
    switch (target.selector) {
      case ProcessTargetConfig::Selector::pid:
      case ProcessTargetConfig::Selector::command:
        selector = "pid " + std::to_string(target.pid);
        break;
      case ProcessTargetConfig::Selector::pidfile: selector = "pidfile " + target.pidfile; break;
      case ProcessTargetConfig::Selector::match:
        selector = "match";
        if (!target.comm.empty()) selector += " comm=/" + target.comm + "/";
        if (!target.exe.empty()) selector += " exe=/" + target.exe + "/";
        if (!target.cmdline.empty()) selector += " cmdline=/" + target.cmdline + "/";
        break;
    }
    lines.push_back("target " + target.name + ": " + selector);
  }
  return lines;
}

std::vector<events::RuleScope> rule_scopes(const Config& config) {
  events::RuleScope scope;
  scope.family_level = "process";
  scope.levels = {{"instance_target", {"target"}}};
  scope.groups = process_groups(config);
  return {scope};
}

// Built only when targets are configured: with none it would count nothing.
bool enabled(const Config& config) {
  const auto& process = config.get<ProcessCollectorConfig>();
  return process.enabled && !process.targets.empty();
}

std::vector<EventSpec> command_events(const Config& config) {
  return config.get<ProcessCollectorConfig>().events;
}
bool command_user_mode_only(const Config& config) {
  return config.get<ProcessCollectorConfig>().domain == CountingDomain::user;
}
std::vector<std::string> check(const Config& config, const Topology& topology,
                               const CollectorServices& services) {
  // Building it probes every event and pidfile, which is what --check-config is for.
  auto collector = make_process_collector(config, topology, services.presets);
  auto lines = process_check_report(config, topology);
  for (auto& line : perf::event_lines(collector->events())) lines.push_back(std::move(line));
  for (const auto& line : collector->group_lines()) lines.push_back(line);
  return lines;
}

}  // namespace

}  // namespace hwperf::process

namespace hwperf {

CollectorEntry process_collector_entry() {
  static const CommandCounting commands = {&add_command_targets, &command_target_started,
                                           &process::command_events,
                                           &process::command_user_mode_only};
  return CollectorEntry("process", &process_settings_keys, &process::enabled,
                        &make_with_presets<&process::make_process_collector>, &process::check)
      .with_files(&process::file_need)
      .with_rule_scopes(&process::rule_scopes)
      .with_families(&process::families)
      .with_commands(commands);
}

}  // namespace hwperf
