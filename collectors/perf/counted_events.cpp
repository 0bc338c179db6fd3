#include "collectors/perf/counted_events.h"

#include <cerrno>
#include <map>
#include <stdexcept>

#include "collectors/events/emission.h"
#include "collectors/events/event_specs.h"
#include "collectors/perf/perf_event.h"
#include "collectors/perf/pfm_encoder.h"
#include "common/log.h"
#include "common/text.h"
#include "config/errors.h"

namespace hwperf::perf {
namespace {

std::string where_of(const PapiEventConfig& event) {
  return event.mark.line != 0 ? event.mark.to_string() + ": " : "";
}

bool missing_counter(int error) {
  return error == ENOENT || error == EOPNOTSUPP || error == EINVAL || error == ENODEV;
}

// A PAPI preset as libpfm4 can encode it: the one native event PAPI defines it as on this CPU,
// else the kernel's generic event with exactly its meaning (encode_event's own fallback); a
// preset PAPI derives from several events (a sum or difference) cannot be one counter. Without
// PAPI, only the kernel's generic equivalent is left.
std::string counted_as(const std::string& event, const EventRequest& request) {
  if (!events::is_preset(event)) return event;
  const auto preset = request.presets->lookup(event, request.procfs);
  if (!preset) return event;
  if (!preset->single_native.empty()) return preset->single_native;
  if (preset->available && preset->native_terms > 1 && !events::generic_equivalent(event)) {
    throw std::invalid_argument(event + " is derived here from " +
                                std::to_string(preset->native_terms) +
                                " native events, which one process counter cannot count; list "
                                "them one by one (papi_avail -e " +
                                event + " names them)");
  }
  return event;
}

// What probing one event found: its encoding, or why it cannot be counted here (`encoding_error`
// is libpfm4's whole sentence, `reason` the kernel's answer without the event's name).
struct Probe {
  EventEncoding encoding;
  std::string encoding_error;
  bool elsewhere = false;  // libpfm4 cannot encode it here: not an event of this machine
  std::string reason;
  std::string cause;  // short: "perf_event_open: ENOENT (...)"
  bool ok() const { return encoding_error.empty() && reason.empty(); }
  std::string why(const std::string& event) const {
    return !encoding_error.empty() ? encoding_error : event + ": " + reason;
  }
};

// Encodes an event and opens it once on this thread: what cannot be counted here is found at
// startup, not on the first scrape. Without CAP_PERFMON and with kernel.perf_event_paranoid = 2,
// the kernel lets a user count user mode only (perf stat does the same): then every event counts
// user mode, and the collector says so (the caller narrows what was resolved before).
Probe probe_event(const std::string& event, const EventRequest& request, ResolvedEvents& resolved) {
  Probe probe;
  try {
    probe.encoding = perf::encode_event(counted_as(event, request), resolved.domain);
    probe.encoding.name = event;
  } catch (const std::invalid_argument& e) {
    probe.encoding_error = e.what();
    probe.elsewhere = dynamic_cast<const perf::UnknownEvent*>(&e) != nullptr;
    return probe;
  }
  EventEncoding& encoding = probe.encoding;
  auto opened = perf::open_counter(encoding, 0, -1);
  if ((opened.error == EACCES || opened.error == EPERM) && !encoding.exclude_kernel &&
      resolved.domain != CountingDomain::kernel) {
    encoding.exclude_kernel = true;
    encoding.exclude_hv = true;
    opened = perf::open_counter(encoding, 0, -1);
    if (opened.ok() && resolved.domain_note.empty()) {
      resolved.domain = CountingDomain::user;
      resolved.domain_note =
          "kernel-mode counts excluded: kernel.perf_event_paranoid is " +
          paranoid_setting(request.procfs) +
          " and the exporter has no CAP_PERFMON, so the kernel allows user mode only";
      log::warn(request.collector + ": " + resolved.domain_note +
                "; run as root or grant CAP_PERFMON to count kernel mode too");
    }
  } else if (!resolved.domain_note.empty()) {
    encoding.exclude_kernel = true;
    encoding.exclude_hv = true;
  }
  if (!opened.ok()) {
    probe.cause = "perf_event_open: " + errno_text(opened.error);
    probe.reason = probe.cause +
                   (missing_counter(opened.error)
                        ? " (this machine has no such counter: a VM without a hardware PMU counts "
                          "software events only, perf::TASK-CLOCK, perf::PAGE-FAULTS, ...)"
                        : "; run as root, grant CAP_PERFMON, or lower kernel.perf_event_paranoid");
  }
  return probe;
}

std::string mode_and_scope(const EventRequest& request, const ResolvedEvents& resolved,
                           const CountedEvent& event) {
  return request.counted_for + " (event " + event.event + ", " + to_string(resolved.domain) +
         " mode), " + request.scope + ", scaled where multiplexed." +
         (event.unit == events::Unit::nanoseconds
              ? " Seconds, converted from the event's nanoseconds."
              : "");
}

void resolve_events(const EventRequest& request, ResolvedEvents& resolved,
                    std::vector<std::string>& problems) {
  std::vector<events::EventSpec> named;  // per resolved event, for events::name_families
  for (const auto& event : request.configured) {
    const std::string where = where_of(event);
    const Probe probe = probe_event(event.event, request, resolved);
    if (!probe.ok()) {
      if (request.defaults) {
        log::warn(request.collector + ": skipping default event " + probe.why(event.event));
      } else {
        problems.push_back(where + request.config_path + ": " + probe.why(event.event));
      }
      continue;
    }
    CountedEvent resolved_event;
    resolved_event.event = event.event;
    resolved_event.where = event.mark.line != 0 ? event.mark.to_string() : "";
    resolved_event.unit = events::event_unit(event.event);
    events::EventSpec spec;
    spec.event = event.event;
    spec.where = resolved_event.where;
    spec.metric = events::metric_base_of(event, where + request.config_path, problems);
    if (spec.metric.empty()) continue;
    std::string description =
        events::description_of(event, [](const std::string& name) { return "Event " + name; });
    if (description.back() != '.') description += '.';
    resolved_event.help = description + " ";  // the mode is known once every event is probed
    resolved_event.encoding = probe.encoding;
    resolved.events.push_back(std::move(resolved_event));
    named.push_back(std::move(spec));
  }
  const auto naming = events::name_families(named, request.level);
  problems.insert(problems.end(), naming.begin(), naming.end());
  for (std::size_t i = 0; i < named.size(); ++i) {
    resolved.events[i].family = named[i].family;
    resolved.events[i].metric = named[i].metric;
  }
}

// Why a group whose members all count alone cannot be opened together; "" when it can.
std::string open_together(const EventRequest& request, const std::vector<EventEncoding>& events) {
  const auto opened =
      request.open_group ? request.open_group(events) : CounterGroup::open(events, 0, -1);
  if (opened.ok()) return "";
  const std::size_t failed = opened.value.failed_event();
  const std::string event = failed < events.size() ? events[failed].name : "?";
  if (opened.error == EINVAL && failed > 0) {
    return "its " + std::to_string(events.size()) +
           " events can never be on the counters together (the kernel refused " + event +
           " beside the others: " + errno_text(opened.error) +
           "); list fewer events in it, or split it into groups of your own";
  }
  return event + ": perf_event_open of the group: " + errno_text(opened.error);
}

void resolve_groups(const EventRequest& request, ResolvedEvents& resolved,
                    std::vector<std::string>& problems) {
  for (const auto& group : request.groups) {
    std::map<std::string, EventEncoding> encoded;  // candidate -> encoding, when countable
    const auto choice = events::choose_members(
        group,
        [&](const PapiEventConfig& candidate) {
          const Probe probe = probe_event(candidate.event, request, resolved);
          if (probe.ok()) encoded[candidate.event] = probe.encoding;
          const std::string named = candidate.event + ": ";
          const std::string error = probe.encoding_error;
          return events::CandidateVerdict{error.empty()                ? probe.reason
                                          : error.rfind(named, 0) == 0 ? error.substr(named.size())
                                                                       : error,
                                          error.empty()     ? probe.cause
                                          : probe.elsewhere ? "not an event of this machine"
                                                            : "not one counter",
                                          probe.elsewhere};
        },
        perf::core_pmu_text());
    std::string why = choice.unavailable;
    std::vector<EventEncoding> encodings;
    for (const auto& event : choice.events) encodings.push_back(encoded.at(event.event));
    if (why.empty()) why = open_together(request, encodings);
    if (!why.empty()) {
      resolved.group_lines.push_back("group " + group.name + ": NOT countable: " + why);
      if (request.default_groups) {
        log::warn(request.collector + ": skipping default group " + group.name + ": " + why);
      } else {
        problems.push_back(group.where + ": group " + group.name + " cannot be counted: " + why);
      }
      continue;
    }
    CountedGroup counted{group.name, group.where, {}};
    std::vector<events::EventSpec> named;
    for (std::size_t i = 0; i < group.members.size(); ++i) {
      const auto& member = group.members[i];
      CountedEvent event;
      event.event = choice.events[i].event;
      event.where = group.where;
      event.unit = member.unit;
      event.help = events::member_help(group, member) + " ";
      event.encoding = encodings[i];
      counted.members.push_back(std::move(event));
      events::EventSpec spec;
      spec.event = choice.events[i].event;
      spec.where = group.where;
      spec.metric = member.metric;
      named.push_back(std::move(spec));
    }
    // Named per group: a member shares its family with the same metric elsewhere.
    const auto naming = events::name_families(named, request.level);
    problems.insert(problems.end(), naming.begin(), naming.end());
    for (std::size_t i = 0; i < named.size(); ++i) {
      counted.members[i].family = named[i].family;
      counted.members[i].metric = named[i].metric;
    }
    std::vector<std::string> names;
    for (const auto& member : counted.members) names.push_back(member.event);
    resolved.group_lines.push_back("group " + group.name + ": countable (" + join(names) + ")");
    resolved.groups.push_back(std::move(counted));
  }
}

}  // namespace

ResolvedEvents resolve_counted_events(const EventRequest& request) {
  if (request.presets == nullptr) throw std::logic_error("resolve_counted_events: no presets");
  ResolvedEvents resolved;
  resolved.domain = request.domain;
  std::vector<std::string> problems;
  resolve_events(request, resolved, problems);
  resolve_groups(request, resolved, problems);
  if (!problems.empty()) throw ConfigError(problems);
  // The domain narrowed while probing: everything counts user mode, and HELP says so.
  std::vector<CountedEvent*> all;
  for (auto& event : resolved.events) all.push_back(&event);
  for (auto& group : resolved.groups) {
    for (auto& member : group.members) all.push_back(&member);
  }
  for (CountedEvent* event : all) {
    if (!resolved.domain_note.empty()) {
      event->encoding.exclude_kernel = true;
      event->encoding.exclude_hv = true;
    }
    event->help += mode_and_scope(request, resolved, *event);
  }
  if (resolved.events.empty() && resolved.groups.empty()) {
    throw std::runtime_error(
        request.collector +
        ": none of the default events or groups can be counted here (see the warnings above); "
        "list events this machine has under " +
        request.config_path);
  }
  return resolved;
}

std::vector<std::string> event_lines(const std::vector<CountedEvent>& events) {
  std::vector<std::string> lines;
  for (const auto& event : events) lines.push_back("event " + event.event + " -> " + event.family);
  return lines;
}

CountingPlan counting_plan(const std::vector<CountedEvent>& events,
                           const std::vector<CountedGroup>& groups) {
  CountingPlan plan;
  std::map<std::string, std::size_t> family_of;
  auto add = [&](const CountedEvent& event, const std::string& group) {
    const auto [at, added] = family_of.emplace(event.family, plan.families.size());
    if (added) plan.families.push_back({event.family, event.help, event.where});
    plan.values.push_back({at->second, event.unit, group, event.event});
  };
  for (const auto& event : events) {
    plan.units.push_back({"", {event.encoding}, plan.values.size()});
    add(event, "");
  }
  for (const auto& group : groups) {
    CountingUnit unit{group.name, {}, plan.values.size()};
    for (const auto& member : group.members) {
      unit.events.push_back(member.encoding);
      add(member, group.name);
    }
    plan.units.push_back(std::move(unit));
  }
  return plan;
}

std::vector<prometheus::MetricFamily> counter_families(const CountingPlan& plan) {
  std::vector<prometheus::MetricFamily> families;
  for (const auto& family : plan.families) {
    families.push_back(events::counter_family(family.name, family.help));
  }
  return families;
}

void add_group_label(Labels& labels, const CountedValue& value) {
  if (!value.group.empty()) labels.emplace_back("group", value.group);
}

}  // namespace hwperf::perf
