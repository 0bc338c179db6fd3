#include "collectors/perf/counted_events.h"

#include <cerrno>
#include <limits>
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

std::string where_of(const EventSpec& event) {
  return event.mark.line != 0 ? event.mark.to_string() + ": " : "";
}

bool missing_counter(int error) {
  return error == ENOENT || error == EOPNOTSUPP || error == EINVAL || error == ENODEV;
}

// A PAPI preset as native events libpfm4 can encode, each times an integer: PAPI's definition
// here when it is one native event; else the kernel's generic event with exactly its meaning
// (encode_event's own fallback); else PAPI's definition as a sum or difference of native events
// (DERIVED_ADD, DERIVED_SUB, a postfix formula of + and -), counted side by side in one kernel
// group. Throws std::invalid_argument saying why a preset cannot be counted. Any other event is
// itself.
std::vector<events::PresetTerm> preset_terms(const std::string& event,
                                             const EventRequest& request) {
  if (!events::is_preset(event)) return {{event, 1}};
  const auto preset = request.presets->lookup(event, request.procfs);
  if (preset && !preset->single_native().empty()) return {{preset->single_native(), 1}};
  // Without PAPI, or for a name PAPI does not know, encode_event says the rest.
  if (!preset || !preset->known || events::generic_equivalent(event)) return {{event, 1}};
  if (preset->available && !preset->derivation.terms.empty()) return preset->derivation.terms;
  if (preset->available) {
    throw std::invalid_argument(event + ": " + preset->derivation.refused +
                                ", and no kernel generic event has exactly its meaning; count "
                                "the native events it is made of instead (papi_avail -e " +
                                event + " names them)");
  }
  throw std::invalid_argument(event + ": this PAPI has no definition of it for this CPU (" +
                              core_pmu_text() +
                              "), and no kernel generic event has exactly its meaning; count "
                              "the native event it stands for instead (papi_native_avail lists "
                              "this CPU's)");
}

// What probing one event found: its counters (one, or a derived preset's terms), or why it
// cannot be counted here (`encoding_error` is libpfm4's or PAPI's whole sentence, `reason` the
// kernel's answer without the event's name).
struct Probe {
  std::vector<CountedTerm> terms;
  std::string counted_as;  // a preset's definition here
  std::string encoding_error;
  bool elsewhere = false;  // libpfm4 cannot encode it here: not an event of this machine
  std::string reason;
  std::string cause;  // short: "perf_event_open: ENOENT (...)"
  bool ok() const { return encoding_error.empty() && reason.empty(); }
  std::string why(const std::string& event) const {
    if (!encoding_error.empty()) return encoding_error;
    return event + (counted_as.empty() ? "" : " (counted as " + counted_as + ")") + ": " + reason;
  }
};

// Opens one counter once on this thread: what cannot be counted here is found at startup, not on
// the first scrape. Without CAP_PERFMON and with kernel.perf_event_paranoid = 2, the kernel lets
// a user count user mode only (perf stat does the same): then every event counts user mode, and
// the collector says so (the caller narrows what was resolved before).
void probe_open(EventEncoding& encoding, const EventRequest& request, ResolvedEvents& resolved,
                Probe& probe) {
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

std::vector<EventEncoding> encodings_of(const std::vector<CountedTerm>& terms) {
  std::vector<EventEncoding> encodings;
  for (const auto& term : terms) encodings.push_back(term.encoding);
  return encodings;
}

// Encodes an event (a preset as its native events) and opens each counter once; a derived
// preset's terms must also open together, as they are counted.
Probe probe_event(const std::string& event, const EventRequest& request, ResolvedEvents& resolved) {
  Probe probe;
  try {
    const auto natives = preset_terms(event, request);
    for (const auto& native : natives) {
      CountedTerm term{perf::encode_event(native.native, resolved.domain), native.coefficient};
      term.encoding.name = natives.size() == 1 ? event : native.native + " (of " + event + ")";
      probe.terms.push_back(std::move(term));
    }
    if (natives.size() > 1 || natives.front().native != event) {
      probe.counted_as = events::derivation_text(natives);
    }
  } catch (const std::invalid_argument& e) {
    probe.encoding_error = e.what();
    probe.elsewhere = dynamic_cast<const perf::UnknownEvent*>(&e) != nullptr;
    return probe;
  }
  for (auto& term : probe.terms) {
    probe_open(term.encoding, request, resolved, probe);
    if (!probe.ok()) return probe;
  }
  if (probe.terms.size() > 1) {
    probe.reason = open_together(request, encodings_of(probe.terms));
    if (!probe.reason.empty()) probe.cause = "its terms never on the counters together";
  }
  return probe;
}

void set_counters(CountedEvent& event, const Probe& probe) {
  event.encoding = probe.terms.front().encoding;
  if (probe.terms.size() > 1) event.derived = probe.terms;
  event.counted_as = probe.counted_as;
}

std::string mode_and_scope(const EventRequest& request, const ResolvedEvents& resolved,
                           const CountedEvent& event) {
  const std::string as = event.counted_as.empty() ? "" : " counted as " + event.counted_as;
  return request.counted_for + " (event " + event.event + as + ", " + to_string(resolved.domain) +
         " mode), " + request.scope + ", scaled where multiplexed." +
         (event.unit == events::Unit::nanoseconds
              ? " Seconds, converted from the event's nanoseconds."
              : "");
}

// Family names of `counted`, one spec each (events::name_families, the one place they are made).
void name_counted(std::vector<CountedEvent>& counted, std::vector<events::ExportedEvent>& named,
                  const EventRequest& request, std::vector<std::string>& problems) {
  const auto naming = events::name_families(named, request.level);
  problems.insert(problems.end(), naming.begin(), naming.end());
  for (std::size_t i = 0; i < named.size(); ++i) {
    counted[i].family = named[i].family;
    counted[i].metric = named[i].metric;
  }
}

void resolve_events(const EventRequest& request, ResolvedEvents& resolved,
                    std::vector<std::string>& problems) {
  std::vector<events::ExportedEvent> named;  // per resolved event, for events::name_families
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
    events::ExportedEvent spec;
    spec.event = event.event;
    spec.where = resolved_event.where;
    spec.metric = events::metric_base_of(event, where + request.config_path, problems);
    if (spec.metric.empty()) continue;
    std::string description =
        events::description_of(event, [](const std::string& name) { return "Event " + name; });
    if (description.back() != '.') description += '.';
    resolved_event.help = description + " ";  // the mode is known once every event is probed
    set_counters(resolved_event, probe);
    resolved.events.push_back(std::move(resolved_event));
    named.push_back(std::move(spec));
  }
  name_counted(resolved.events, named, request, problems);
}

// A candidate's probe as events::choose_members judges it.
events::CandidateVerdict verdict_of(const Probe& probe, const std::string& candidate) {
  const std::string& error = probe.encoding_error;
  if (error.empty()) return {probe.reason, probe.cause, false};
  const std::string named = candidate + ": ";  // choose_members names the candidate already
  return {error.rfind(named, 0) == 0 ? error.substr(named.size()) : error,
          probe.elsewhere ? "not an event of this machine" : "not one counter", probe.elsewhere};
}

// The chosen events of a countable group as its members are counted and named.
CountedGroup counted_group(const events::GroupDefinition& group,
                           const std::vector<EventSpec>& chosen,
                           const std::map<std::string, Probe>& probes, const EventRequest& request,
                           std::vector<std::string>& problems) {
  CountedGroup counted{group.name, group.where, {}};
  std::vector<events::ExportedEvent> named;
  for (std::size_t i = 0; i < group.members.size(); ++i) {
    const auto& member = group.members[i];
    CountedEvent event;
    event.event = chosen[i].event;
    event.where = group.where;
    event.unit = member.unit;
    event.help = events::member_help(group, member) + " ";
    set_counters(event, probes.at(event.event));
    counted.members.push_back(std::move(event));
    events::ExportedEvent spec;
    spec.event = chosen[i].event;
    spec.where = group.where;
    spec.metric = member.metric;
    named.push_back(std::move(spec));
  }
  // Named per group: a member shares its family with the same metric elsewhere.
  name_counted(counted.members, named, request, problems);
  return counted;
}

void resolve_groups(const EventRequest& request, ResolvedEvents& resolved,
                    std::vector<std::string>& problems) {
  for (const auto& group : request.groups) {
    std::map<std::string, Probe> probes;  // candidate -> what probing it found
    const auto choice = events::choose_members(
        group,
        [&](const EventSpec& candidate) {
          const auto& probe = probes[candidate.event] =
              probe_event(candidate.event, request, resolved);
          return verdict_of(probe, candidate.event);
        },
        perf::core_pmu_text());
    std::string why = choice.unavailable;
    std::vector<EventEncoding> encodings;  // every member's counters, a derived one's terms
    for (const auto& event : choice.events) {
      for (const auto& term : probes.at(event.event).terms) encodings.push_back(term.encoding);
    }
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
    CountedGroup counted = counted_group(group, choice.events, probes, request, problems);
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
      std::vector<EventEncoding*> encodings = {&event->encoding};
      for (auto& term : event->derived) encodings.push_back(&term.encoding);
      for (EventEncoding* encoding : encodings) {
        encoding->exclude_kernel = true;
        encoding->exclude_hv = true;
      }
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
  for (const auto& event : events) {
    lines.push_back("event " + event.event + " -> " + event.family +
                    (event.counted_as.empty() ? "" : " (counted as " + event.counted_as + ")"));
  }
  return lines;
}

std::vector<CountedTerm> counters_of(const CountedEvent& event) {
  if (!event.derived.empty()) return event.derived;
  return {{event.encoding, 1}};
}

CountingPlan counting_plan(const std::vector<CountedEvent>& events,
                           const std::vector<CountedGroup>& groups) {
  CountingPlan plan;
  std::map<std::string, std::size_t> family_of;
  auto add = [&](const CountedEvent& event, const std::string& group, CountingUnit& unit) {
    const auto [at, added] = family_of.emplace(event.family, plan.families.size());
    if (added) plan.families.push_back({event.family, event.help, event.where});
    CountedValue value{at->second, event.unit, group, event.event, {}};
    for (const auto& term : counters_of(event)) {
      value.terms.emplace_back(plan.counts++, term.coefficient);
      unit.events.push_back(term.encoding);
    }
    plan.values.push_back(std::move(value));
  };
  for (const auto& event : events) {
    CountingUnit unit{"", {}, plan.counts, plan.values.size()};
    add(event, "", unit);
    plan.units.push_back(std::move(unit));
  }
  for (const auto& group : groups) {
    CountingUnit unit{group.name, {}, plan.counts, plan.values.size()};
    for (const auto& member : group.members) add(member, group.name, unit);
    plan.units.push_back(std::move(unit));
  }
  return plan;
}

std::vector<std::uint64_t> value_totals(const CountingPlan& plan,
                                        const std::vector<std::uint64_t>& counts,
                                        std::size_t slots) {
  std::vector<std::uint64_t> values(plan.values.size() * slots, 0);
  for (std::size_t value = 0; value < plan.values.size(); ++value) {
    for (std::size_t slot = 0; slot < slots; ++slot) {
      __int128 sum = 0;
      for (const auto& [count, coefficient] : plan.values[value].terms) {
        sum += static_cast<__int128>(coefficient) *
               static_cast<__int128>(counts.at(count * slots + slot));
      }
      const auto most = static_cast<__int128>(std::numeric_limits<std::uint64_t>::max());
      values[value * slots + slot] =
          sum <= 0 ? 0 : static_cast<std::uint64_t>(sum > most ? most : sum);
    }
  }
  return values;
}

std::vector<prometheus::MetricFamily> counter_families(const CountingPlan& plan) {
  std::vector<prometheus::MetricFamily> families;
  for (const auto& family : plan.families) {
    families.push_back(events::counter_family(family.name, family.help));
  }
  return families;
}

void write_counter_families(
    const CountingPlan& plan, const std::vector<PreparedFamily>& families,
    const std::vector<events::CounterSeries>& series, std::size_t slots, std::size_t members,
    const std::function<const std::vector<std::uint64_t>&(std::size_t)>& values_of,
    std::string& out, ExpositionFormat format) {
  for (std::size_t family = 0; family < families.size(); ++family) {
    PreparedFamily::Writer writer(families[family], out, format);
    writer.open();
    std::size_t at = 0;
    for (std::size_t member = 0; member < members; ++member) {
      const auto& values = values_of(member);
      for (std::size_t value = 0; value < plan.events(); ++value) {
        if (plan.values[value].family != family) continue;
        at = events::write_series(writer, at, series, values, value * slots,
                                  plan.values[value].unit);
      }
    }
  }
}

void add_group_label(Labels& labels, const CountedValue& value) {
  if (!value.group.empty()) labels.emplace_back("group", value.group);
}

}  // namespace hwperf::perf
