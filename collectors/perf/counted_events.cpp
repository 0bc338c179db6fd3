#include "collectors/perf/counted_events.h"

#include <cerrno>
#include <stdexcept>

#include "collectors/events/event_specs.h"
#include "collectors/perf/pfm_encoder.h"
#include "common/log.h"
#include "common/sysctl.h"
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

// Encodes every event and opens it once on this thread: what cannot be counted here is found at
// startup, not on the first scrape. Without CAP_PERFMON and with kernel.perf_event_paranoid = 2,
// the kernel lets a user count user mode only (perf stat does the same): then every event counts
// user mode, and the collector says so.
}  // namespace

ResolvedEvents resolve_counted_events(const EventRequest& request) {
  const bool defaults = request.defaults;
  const auto& configured = request.configured;
  const std::string& procfs = request.procfs;
  if (request.presets == nullptr) throw std::logic_error("resolve_counted_events: no presets");
  ResolvedEvents resolved{{}, request.domain, ""};
  std::vector<std::string> problems;
  std::vector<events::EventSpec> named;  // per resolved event, for events::name_families
  for (const auto& event : configured) {
    const std::string where = where_of(event);
    perf::EventEncoding encoding;
    try {
      encoding = perf::encode_event(counted_as(event.event, request), resolved.domain);
      encoding.name = event.event;
    } catch (const std::invalid_argument& e) {
      if (defaults) {
        log::warn(request.collector + ": skipping default event " + event.event + ": " + e.what());
      } else {
        problems.push_back(where + request.config_path + ": " + e.what());
      }
      continue;
    }
    auto probe = perf::open_counter(encoding, 0, -1);
    if ((probe.error == EACCES || probe.error == EPERM) && !encoding.exclude_kernel &&
        resolved.domain != CountingDomain::kernel) {
      encoding.exclude_kernel = true;
      encoding.exclude_hv = true;
      probe = perf::open_counter(encoding, 0, -1);
      if (probe.ok() && resolved.domain_note.empty()) {
        resolved.domain = CountingDomain::user;
        resolved.domain_note =
            "kernel-mode counts excluded: kernel.perf_event_paranoid is " +
            read_sysctl(procfs, "kernel.perf_event_paranoid") +
            " and the exporter has no CAP_PERFMON, so the kernel allows user mode only";
        log::warn(request.collector + ": " + resolved.domain_note +
                  "; run as root or grant CAP_PERFMON to count kernel mode too");
        for (auto& earlier : resolved.events) {
          earlier.encoding.exclude_kernel = true;
          earlier.encoding.exclude_hv = true;
        }
      }
    } else if (!resolved.domain_note.empty()) {
      encoding.exclude_kernel = true;
      encoding.exclude_hv = true;
    }
    if (!probe.ok()) {
      const std::string reason =
          event.event + ": perf_event_open: " + errno_text(probe.error) +
          (missing_counter(probe.error)
               ? " (this machine has no such counter: a VM without a hardware PMU counts "
                 "software events only, perf::TASK-CLOCK, perf::PAGE-FAULTS, ...)"
               : "; run as root, grant CAP_PERFMON, or lower kernel.perf_event_paranoid");
      if (defaults) {
        log::warn(request.collector + ": skipping default event " + reason);
      } else {
        problems.push_back(where + request.config_path + ": " + reason);
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
    resolved_event.help = description + " " + request.counted_for + " (event " + event.event +
                          ", " + to_string(resolved.domain) + " mode), " + request.scope +
                          ", scaled where multiplexed." +
                          (resolved_event.unit == events::Unit::nanoseconds
                               ? " Seconds, converted from the event's nanoseconds."
                               : "");
    resolved_event.encoding = encoding;
    resolved.events.push_back(std::move(resolved_event));
    named.push_back(std::move(spec));
  }
  const auto naming = events::name_families(named, request.level);
  problems.insert(problems.end(), naming.begin(), naming.end());
  for (std::size_t i = 0; i < named.size(); ++i) resolved.events[i].family = named[i].family;
  if (!problems.empty()) throw ConfigError(problems);
  if (resolved.events.empty()) {
    throw std::runtime_error(
        request.collector +
        ": none of the default events can be counted here (see the warnings above); list "
        "events this machine has under " +
        request.config_path);
  }
  return resolved;
}

std::vector<std::string> event_lines(const std::vector<CountedEvent>& events) {
  std::vector<std::string> lines;
  for (const auto& event : events) lines.push_back("event " + event.event + " -> " + event.family);
  return lines;
}

}  // namespace hwperf::perf
