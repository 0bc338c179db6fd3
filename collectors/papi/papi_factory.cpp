// From configuration to a running PAPI collector: validate what the user asked for (every
// problem at once), open the counters, and say once, at startup, what could not be counted and
// what to do about it. Also the --check-config report, built the same way.
#include "collectors/papi/papi_factory.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <tuple>

#include "collectors/papi/papi_collector.h"
#include "collectors/events/event_specs.h"
#include "collectors/events/groups.h"
#include "collectors/papi/papi_group_source.h"
#include "collectors/papi/papi_groups.h"
#include "collectors/papi/papi_library.h"
#include "collectors/papi/papi_presets.h"
#include "collectors/papi/papi_source.h"
#include "common/cpu_list.h"
#include "config/errors.h"
#include "common/log.h"
#include "topology/topology.h"

namespace hwperf {

namespace papi {

std::vector<EventSpec> default_events() {
  // The scheduler's view, which keeps the default useful on machines (VMs) without a hardware
  // PMU. Throughput, branch and cache behaviour and the clock are the default groups (below):
  // counted in groups, their ratios are ratios over the same time. Only the kernel's generic
  // events: one image runs on a fleet of CPU generations.
  return events::events_from_names(
      {"perf::CONTEXT-SWITCHES", "perf::CPU-MIGRATIONS", "perf::PAGE-FAULTS"});
}

std::vector<std::string> default_group_names() { return {"ipc", "branch", "cache", "freq"}; }

std::vector<EventSpec> ungrouped_events(const PapiCollectorConfig& config) {
  if (config.events_given) return config.events;
  return config.groups_given ? std::vector<EventSpec>{} : default_events();
}

std::vector<events::GroupDefinition> configured_groups(const PapiCollectorConfig& config,
                                                       const std::vector<GroupConfig>& user) {
  return events::group_definitions(config.groups, config.groups_given || config.events_given,
                                   default_group_names(), user, "collectors.papi.groups");
}

std::vector<unsigned> select_cpus(const PapiCollectorConfig& config, const Topology& topology) {
  if (config.cpus.all) return topology.cpus();
  const std::string where = config.cpus.mark.to_string();
  std::vector<unsigned> missing;
  for (unsigned cpu : config.cpus.cpus) {
    if (topology.find(cpu) == nullptr) missing.push_back(cpu);
  }
  if (!missing.empty()) {
    throw ConfigError({where + ": collectors.papi.cpus names CPUs " + format_cpu_list(missing) +
                       ", which this machine does not have online (it has " +
                       format_cpu_list(topology.cpus()) + ")"});
  }
  return config.cpus.cpus;
}

std::size_t descriptors_per_cpu(const std::vector<std::string>& events,
                                const std::function<unsigned(const std::string&)>& native_terms) {
  std::size_t total = 0;
  for (const auto& event : events) total += std::max(1u, native_terms(event));
  return total;
}

}  // namespace papi

namespace {

using events::ExportedEvent;

struct Prepared {
  std::vector<ExportedEvent> specs;
  std::vector<unsigned> cpus;
  std::unique_ptr<papi::CounterSource> source;
  std::vector<std::string> skipped_defaults;  // default events PAPI does not know here
  std::vector<std::size_t> opened_as;         // spec index -> the source's event index
  std::vector<papi::PlannedGroup> groups;     // counted, in the layout's order
  std::vector<papi::ExportedGroup> exported;  // the same, as the collector exports them
  std::vector<papi::DroppedGroup> dropped;    // default groups this machine cannot count
};

bool default_set(const PapiCollectorConfig& config) {
  return !config.events_given && !config.groups_given;
}
using papi::configured_groups;
using papi::ungrouped_events;

papi::GroupProbe group_probe(const PapiCollectorConfig& config, const std::vector<unsigned>& cpus,
                             const PathsConfig& paths) {
  papi::GroupProbe probe;
  probe.cpu = cpus.empty() ? 0 : static_cast<int>(cpus.front());
  probe.domain = config.domain;
  probe.paths = paths;
  probe.presets = &papi::preset_catalog();
  return probe;
}

// The collector opens every configured event (two entries of one event are two counters);
// --check-config opens each distinct counted event once and reports it for every entry, so that
// its cost follows the distinct events (PAPI's thread list makes each further owner dearer: 2,000
// copies of one software event took 10 s here, 10,000 over two minutes).
enum class OpenEach { configured_event, distinct_event };

void append(std::vector<std::string>& to, const std::vector<std::string>& from) {
  to.insert(to.end(), from.begin(), from.end());
}

struct LookedUp {  // the configured events PAPI knows, their descriptions, what each counts as
  std::vector<EventSpec> known;
  std::map<std::string, std::string> descriptions;
  std::map<std::string, std::string> counted_as;
};

// Looks each event up in PAPI: an unknown one is a problem the user wrote, or a default skipped.
LookedUp look_up(const std::vector<EventSpec>& events, bool defaults, Prepared& prepared,
                 std::vector<std::string>& problems) {
  LookedUp looked_up;
  for (const auto& event : events) {
    const auto lookup = papi::lookup_event(event.event);
    // A preset PAPI knows but has no definition of for this CPU (PAPI 7.0.0 stops at Ice Lake-SP
    // and Zen 3) is counted through the kernel's generic event where it means the same.
    // The event itself was just looked up; only its generic twin costs a second lookup.
    looked_up.counted_as[event.event] =
        events::choose_counted_as(event.event, [&](const std::string& name) {
          const auto found = name == event.event ? lookup : papi::lookup_event(name);
          return events::EventStatus{found.known, found.available};
        });
    if (!lookup.known) {
      if (defaults) {
        prepared.skipped_defaults.push_back(event.event + " (" + lookup.error + ")");
      } else {
        problems.push_back(event.mark.to_string() + ": unknown PAPI event \"" + event.event +
                           "\" (" + lookup.error +
                           "); papi_avail lists the presets and papi_native_avail the native "
                           "events (with their qualifiers) that PAPI knows on this machine");
      }
      continue;
    }
    looked_up.descriptions[event.event] = lookup.description;
    looked_up.known.push_back(event);
  }
  return looked_up;
}

// What the PAPI sets open: each spec's counted event, or each distinct one once (opened_as).
std::vector<std::string> opened_events(Prepared& prepared,
                                       const std::map<std::string, std::string>& counted_as,
                                       OpenEach open_each) {
  std::vector<std::string> opened_events;
  std::map<std::string, std::size_t> opened;  // counted event -> index in opened_events
  for (auto& spec : prepared.specs) {
    if (const auto it = counted_as.find(spec.event); it != counted_as.end()) {
      spec.counted_as = it->second;
    }
    if (open_each == OpenEach::distinct_event) {
      const auto [it, inserted] = opened.emplace(spec.counted_as, opened_events.size());
      if (inserted) opened_events.push_back(spec.counted_as);
      prepared.opened_as.push_back(it->second);
    } else {
      prepared.opened_as.push_back(opened_events.size());
      opened_events.push_back(spec.counted_as);
    }
  }
  return opened_events;
}

Prepared prepare(const PapiCollectorConfig& config, const Topology& topology,
                 const PathsConfig& paths, const std::vector<GroupConfig>& user_groups,
                 OpenEach open_each = OpenEach::configured_event) {
  Prepared prepared;
  std::vector<std::string> problems;
  try {
    prepared.cpus = papi::select_cpus(config, topology);
  } catch (const ConfigError& e) {
    append(problems, e.problems());
  }
  std::vector<events::GroupDefinition> groups;
  try {
    groups = configured_groups(config, user_groups);
  } catch (const ConfigError& e) {
    append(problems, e.problems());
  }
  // Unknown names are errors when the user wrote them (all reported together) and a skip when
  // they come from the default set, which is written for many machines at once.
  const bool defaults = default_set(config);
  papi::init_library(paths.procfs);
  LookedUp looked_up = look_up(ungrouped_events(config), defaults, prepared, problems);
  try {
    prepared.specs = events::resolve_event_specs(
        looked_up.known, defaults, config.granularity,
        [&](const std::string& name) { return looked_up.descriptions[name]; });
  } catch (const ConfigError& e) {
    append(problems, e.problems());
  }
  if (!problems.empty()) throw ConfigError(std::move(problems));

  papi::OpenRequest request;
  request.events = opened_events(prepared, looked_up.counted_as, open_each);
  request.cpus = prepared.cpus;
  request.domain = config.domain;
  request.attach = config.attach;
  request.multiplex = config.multiplex;
  request.paths = paths;
  // The default groups are best effort like the default events; groups the user listed are
  // strict (a ConfigError naming each one that cannot be counted).
  std::vector<papi::PlannedGroup> skipped;
  prepared.groups = papi::countable_groups(groups, group_probe(config, prepared.cpus, paths),
                                           !config.groups_given, &skipped);
  prepared.exported = papi::exported_groups(prepared.groups);
  for (const auto& group : skipped) {
    prepared.dropped.push_back({group.definition.name, group.member, group.event, group.cause});
  }
  std::vector<papi::GroupOpening> openings;
  std::size_t next_event = prepared.specs.size();
  for (const auto& group : prepared.groups) {
    openings.push_back({group.definition.name, group.encodings, next_event});
    next_event += group.encodings.size() + 2;
  }
  auto groups_source = std::make_unique<papi::GroupSource>(openings, prepared.cpus, paths);
  if (request.events.empty()) {
    prepared.source = std::move(groups_source);
  } else if (openings.empty()) {
    prepared.source = papi::open_papi_source(request);
  } else {
    prepared.source = papi::join_sources(papi::open_papi_source(request), std::move(groups_source));
  }
  return prepared;
}

// The events of the groups, by layout event index (after the ungrouped specs), for messages.
std::map<std::size_t, std::string> group_event_names(const Prepared& prepared) {
  std::map<std::size_t, std::string> names;
  std::size_t next = prepared.specs.size();
  for (const auto& group : prepared.groups) {
    for (const auto& event : group.counted) {
      names[next++] = "group " + group.definition.name + "'s " + event;
    }
    next += 2;
  }
  return names;
}

// Dropped counters grouped as (event, reason, remedy) -> CPUs, so that one event that cannot be
// counted on 128 CPUs is one line, not 128.
using DropKey = std::tuple<std::size_t, std::string, std::string>;
std::map<DropKey, std::vector<unsigned>> group_drops(const papi::SourceLayout& layout) {
  std::map<DropKey, std::vector<unsigned>> groups;
  for (const auto& drop : layout.dropped) {
    groups[{drop.event, drop.reason, drop.remedy}].push_back(drop.cpu);
  }
  return groups;
}

std::map<std::size_t, std::vector<unsigned>> counting_cpus(const papi::SourceLayout& layout) {
  std::map<std::size_t, std::vector<unsigned>> cpus;
  for (const auto& counter : layout.counters) cpus[counter.event].push_back(counter.cpu);
  for (auto& [event, list] : cpus) {
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
  }
  return cpus;
}

std::string drop_text(const std::string& event, const std::vector<unsigned>& cpus,
                      const std::string& reason, const std::string& remedy) {
  return event + " on CPUs " + format_cpu_list(cpus) + ": " + reason +
         (remedy.empty() ? "" : "; " + remedy);
}

// "A (CPUs 0-3), B (CPUs 0-3): reason; remedy" per distinct reason, for the drops of the events
// `wanted` accepts: a long remedy that holds for many events is said once.
std::vector<std::string> drops_by_reason(const Prepared& prepared, const papi::SourceLayout& layout,
                                         const std::function<bool(const ExportedEvent&)>& wanted) {
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> by_reason;
  for (const auto& [key, cpus] : group_drops(layout)) {
    const auto& [event, reason, remedy] = key;
    if (event >= prepared.specs.size() || !wanted(prepared.specs[event])) continue;
    by_reason[{reason, remedy}].push_back(prepared.specs[event].event + " (CPUs " +
                                          format_cpu_list(cpus) + ")");
  }
  std::vector<std::string> lines;
  for (const auto& [why, events] : by_reason) {
    std::string names;
    for (const auto& name : events) names += (names.empty() ? "" : ", ") + name;
    lines.push_back(names + ": " + why.first + "; " + why.second);
  }
  return lines;
}

// " (counted as perf::INSTRUCTIONS: ...)" for a substituted preset, else "".
std::string counted_as_text(const ExportedEvent& spec) {
  if (spec.counted_as == spec.event) return "";
  return " (counted as " + spec.counted_as + ": this PAPI defines no " + spec.event +
         " for this CPU, and the kernel's generic event means the same)";
}

}  // namespace

std::unique_ptr<Collector> make_papi_collector(const PapiCollectorConfig& config,
                                               const Topology& topology, const PathsConfig& paths,
                                               const std::vector<GroupConfig>& user_groups) {
  const bool defaults = default_set(config);
  std::optional<Prepared> maybe_prepared;
  try {
    maybe_prepared.emplace(prepare(config, topology, paths, user_groups, OpenEach::distinct_event));
  } catch (const papi::UnavailableError& e) {
    // The default set is best effort, and a fleet mixes CPU generations: topology and energy
    // keep being served. Events the user listed are a promise, so their absence stops startup.
    if (!defaults) throw;
    log::warn(std::string(e.what()) + ". Serving everything else; hwperf_papi_available{reason=\"" +
              e.reason() + "\"} is 0");
    return make_papi_unavailable_collector(e.reason());
  }
  Prepared& prepared = *maybe_prepared;
  const auto& layout = prepared.source->layout();
  for (const auto& spec : prepared.specs) {
    if (spec.counted_as != spec.event) {
      log::info("papi: " + spec.event + counted_as_text(spec));
    }
  }

  for (const auto& skipped : prepared.skipped_defaults) {
    log::info("papi: skipping default event " + skipped + ": PAPI does not know it here");
  }
  for (const auto& note : layout.notes) log::info("papi: " + note);
  // The user's events: one line each, as each is a promise the exporter could not keep.
  const auto group_events = group_event_names(prepared);
  for (const auto& [key, cpus] : group_drops(layout)) {
    const auto& [event, reason, remedy] = key;
    if (event >= prepared.specs.size()) {
      log::warn("papi: not counting " + drop_text(group_events.at(event), cpus, reason, remedy));
      continue;
    }
    const auto& spec = prepared.specs[event];
    if (spec.is_default) continue;
    log::warn("papi: not counting " + drop_text(spec.event, cpus, reason, remedy) +
              " (see hwperf_papi_event_dropped)");
  }
  // Default events are best effort: one line per reason.
  for (const auto& line : drops_by_reason(
           prepared, layout, [](const ExportedEvent& spec) { return spec.is_default; })) {
    log::info("papi: skipping default events " + line);
  }

  const auto counting = counting_cpus(layout);
  if (counting.empty()) {
    if (!defaults) {
      std::string message = "papi: none of the configured events can be counted on CPUs " +
                            format_cpu_list(prepared.cpus) + ".";
      for (const auto& line :
           drops_by_reason(prepared, layout, [](const ExportedEvent&) { return true; })) {
        message += " " + line + ".";
      }
      throw std::runtime_error(message);
    }
    log::warn(
        "papi: none of the default events can be counted here; only the hwperf_papi_* "
        "status metrics are exported. List events this machine supports under "
        "collectors.papi.events (papi_avail, papi_native_avail) or disable the collector");
  } else {
    std::size_t multiplexed = 0;
    for (const auto& set : layout.event_sets) multiplexed += set.multiplexed ? 1 : 0;
    // The CPUs something counts on, not the CPUs asked for: a topology larger than the machine
    // (or offline CPUs) must not read as counted.
    std::vector<unsigned> counted_cpus;
    for (const auto& counter : layout.counters) counted_cpus.push_back(counter.cpu);
    std::sort(counted_cpus.begin(), counted_cpus.end());
    counted_cpus.erase(std::unique(counted_cpus.begin(), counted_cpus.end()), counted_cpus.end());
    const auto ungrouped = std::count_if(counting.begin(), counting.end(), [&](const auto& entry) {
      return entry.first < prepared.specs.size();
    });
    log::info("papi: counting " + std::to_string(ungrouped) + " of " +
              std::to_string(prepared.specs.size()) + " events and " +
              std::to_string(prepared.groups.size()) + " groups on CPUs " +
              format_cpu_list(counted_cpus) +
              (counted_cpus.size() < prepared.cpus.size()
                   ? " of " + format_cpu_list(prepared.cpus) + " asked for"
                   : std::string()) +
              " in " + std::to_string(layout.event_sets.size()) + " event sets (" +
              std::to_string(multiplexed) + " multiplexed), granularity " +
              to_string(config.granularity) + ", domain " + to_string(config.domain));
  }
  for (const auto& group : prepared.groups) {
    log::info("papi: counting " + papi::group_check_line(group).substr(6) +
              " as one kernel group per CPU");
  }
  papi::Maintenance maintenance;
  maintenance.online_cpus = [sysfs = paths.sysfs] { return read_online_cpus(sysfs); };
  return make_papi_collector_from_source(config, std::move(prepared.specs), topology,
                                         std::move(prepared.source), std::move(maintenance),
                                         std::move(prepared.exported), std::move(prepared.dropped));
}

FileNeed papi_file_need(const PapiCollectorConfig& config, const Topology& topology,
                        const PathsConfig& paths, const std::vector<GroupConfig>& user_groups) {
  const std::size_t cpus = papi::select_cpus(config, topology).size();
  const auto configured = ungrouped_events(config);
  // Every member of every group is a descriptor of its own (default groups counted as if each
  // could be counted: the need is an upper bound).
  std::size_t group_members = 0;
  for (const auto& group : configured_groups(config, user_groups)) {
    group_members += group.members.size();
  }
  std::vector<std::string> events;
  for (const auto& event : configured) events.push_back(event.event);
  bool papi_runs = true;
  try {
    papi::init_library(paths.procfs);
  } catch (const papi::UnavailableError&) {
    papi_runs = false;
  }
  const std::size_t per_cpu = papi::descriptors_per_cpu(events, [&](const std::string& event) {
    if (!papi_runs) return 1u;
    // What the collector will open: a preset PAPI does not define here is its generic twin.
    const auto lookup = papi::lookup_event(event);
    const std::string counted = events::choose_counted_as(event, [&](const std::string& name) {
      const auto found = name == event ? lookup : papi::lookup_event(name);
      return events::EventStatus{found.known, found.available};
    });
    return counted == event ? lookup.native_terms : papi::lookup_event(counted).native_terms;
  });
  const std::string natives = std::to_string(per_cpu) + " native events";
  return {"PAPI: " + std::to_string(cpus) + " CPUs x " +
              (group_members == 0
                   ? natives
                   : "(" + natives + " + " + std::to_string(group_members) + " group members)"),
          static_cast<unsigned long>(cpus * (per_cpu + group_members))};
}

std::vector<std::string> papi_check_report(const PapiCollectorConfig& config,
                                           const Topology& topology, const PathsConfig& paths,
                                           const std::vector<GroupConfig>& user_groups) {
  std::optional<Prepared> maybe_prepared;
  try {
    maybe_prepared.emplace(prepare(config, topology, paths, user_groups, OpenEach::distinct_event));
  } catch (const papi::UnavailableError& e) {
    if (!default_set(config)) throw;
    return {"unavailable (" + e.reason() + "), default events: the exporter starts without PAPI. " +
            e.what()};
  }
  Prepared& prepared = *maybe_prepared;
  const auto& layout = prepared.source->layout();
  std::vector<std::string> lines;
  lines.push_back("CPUs " + format_cpu_list(prepared.cpus) + ", attach " +
                  to_string(config.attach) + ", domain " + to_string(config.domain) +
                  ", granularity " + to_string(config.granularity) + ", multiplex " +
                  (config.multiplex ? "on" : "off") +
                  (default_set(config) ? ", default events and groups (best effort)" : ""));
  for (const auto& skipped : prepared.skipped_defaults) {
    lines.push_back(skipped + ": unknown to PAPI here; default event, skipped");
  }
  // Everything per opened event is gathered in one pass each, so the report is linear in the
  // number of events, counters and sets.
  const auto counting = counting_cpus(layout);
  std::map<std::size_t, std::vector<std::string>> bindings;  // opened event -> in set order
  for (const auto& set : layout.event_sets) {
    for (std::size_t counter : set.counters) {
      auto& of_event = bindings[layout.counters[counter].event];
      if (std::find(of_event.begin(), of_event.end(), set.binding) == of_event.end()) {
        of_event.push_back(set.binding);
      }
    }
  }
  std::map<std::size_t, std::vector<std::string>> not_countable;  // opened event -> lines
  for (const auto& [key, cpus] : group_drops(layout)) {
    const auto& [event, reason, remedy] = key;
    not_countable[event].push_back("NOT countable on CPUs " + format_cpu_list(cpus) + ": " +
                                   reason + " (" + remedy + ")");
  }
  for (std::size_t e = 0; e < prepared.specs.size(); ++e) {
    const auto& spec = prepared.specs[e];
    const std::size_t opened = prepared.opened_as[e];
    std::vector<std::string> parts;
    if (const auto it = counting.find(opened); it != counting.end()) {
      std::string via;
      for (const auto& binding : bindings[opened]) via += (via.empty() ? "" : "+") + binding;
      parts.push_back("countable on CPUs " + format_cpu_list(it->second) + " (" + via + ")");
    }
    for (const auto& line : not_countable[opened]) parts.push_back(line);
    std::string line = spec.event + " -> " + spec.family + counted_as_text(spec);
    for (std::size_t i = 0; i < parts.size(); ++i) line += (i == 0 ? ": " : "; ") + parts[i];
    if (spec.is_default && counting.count(opened) == 0) line += "; default event, skipped";
    lines.push_back(std::move(line));
  }
  append(lines,
         papi::group_report_lines(prepared.groups, group_probe(config, prepared.cpus, paths)));
  for (const auto& note : layout.notes) lines.push_back("note: " + note);
  return lines;
}

}  // namespace hwperf
