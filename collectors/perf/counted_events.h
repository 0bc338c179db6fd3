// The events a perf-backend collector counts (process targets, containers), resolved once at
// startup from the shared vocabulary (collectors/events): presets through PAPI's one-native
// definition (the preset catalog) or their exact kernel generic event, everything encoded by
// libpfm4 and opened once on this thread so that what cannot be counted here is found before
// serving, with the family names made by events::name_families.
#pragma once

#include <string>
#include <vector>

#include "collectors/events/presets.h"
#include "collectors/events/vocabulary.h"
#include "collectors/perf/perf_event.h"
#include "config/config.h"

namespace hwperf::perf {

struct CountedEvent {
  std::string event;   // as configured
  std::string where;   // file:line:column, or "" for a default event
  std::string family;  // hwperf_<level>_<metric>_total
  std::string help;
  events::Unit unit = events::Unit::count;
  EventEncoding encoding;
};

struct EventRequest {
  std::vector<PapiEventConfig> configured;
  bool defaults = false;  // best effort: what cannot be counted is skipped with a warning
  const events::PresetCatalog* presets = nullptr;  // what PAPI defines presets as; required
  CountingDomain domain = CountingDomain::all;
  std::string procfs;
  std::string level;        // "process", "container": the family prefix
  std::string collector;    // "process", "cgroup": the collector's name, in the log
  std::string config_path;  // "collectors.process.events", named in errors
  std::string counted_for;  // "Counted for each process target", in HELP
  // How the counts add up, in HELP after counted_for.
  std::string scope = "every thread and what it starts";
};

struct ResolvedEvents {
  std::vector<CountedEvent> events;
  CountingDomain domain = CountingDomain::all;  // narrower than asked when the kernel allows less
  std::string domain_note;                      // why it is narrower, "" when it is not
};

// Throws ConfigError naming file:line:column for events the user listed that cannot be counted,
// std::runtime_error when none of the defaults can.
ResolvedEvents resolve_counted_events(const EventRequest& request);

// The --check-config lines of resolved events: "event perf::TASK-CLOCK -> hwperf_..._total".
std::vector<std::string> event_lines(const std::vector<CountedEvent>& events);

}  // namespace hwperf::perf
