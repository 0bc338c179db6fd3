// Which of the papi collector's event groups this machine can count, and with which events: each
// member's first candidate that encodes (libpfm4, or the kernel's sysfs description) and opens
// system-wide on a CPU, then the whole group opened there once, as the kernel will schedule it.
// Internal to collectors/papi.
#pragma once

#include <string>
#include <vector>

#include "collectors/events/groups.h"
#include "collectors/events/presets.h"
#include "collectors/papi/papi_collector.h"
#include "collectors/perf/perf_event.h"
#include "collectors/papi/papi_config.h"

namespace hwperf::papi {

struct GroupProbe {
  int cpu = 0;  // where candidates and groups are opened once to be judged
  CountingDomain domain = CountingDomain::all;
  PathsConfig paths;
  const events::PresetCatalog* presets = nullptr;  // what PAPI defines presets as; required
};

struct PlannedGroup {
  events::GroupDefinition definition;
  std::vector<std::string> counted;            // per member: the candidate chosen
  std::vector<perf::EventEncoding> encodings;  // per member, the leader first
  // "" when countable; else "<member> (<event>: <reason>)", or why the members can never be on
  // the counters together.
  std::string unavailable;
  // Its parts (events::MemberChoice): the member, the event and a short cause.
  std::string member;
  std::string event;
  std::string cause;
};

// One candidate as one kernel counter: a preset through the one native event PAPI defines it as
// here, else its exact generic equivalent (events/vocabulary.h); "pmu/event/" through sysfs;
// anything else through libpfm4. Throws std::invalid_argument saying why not (a preset PAPI
// derives from several events cannot be one member).
perf::EventEncoding encode_member(const std::string& event, const GroupProbe& probe);

PlannedGroup plan_group(const events::GroupDefinition& group, const GroupProbe& probe);

// The groups to count. best_effort (the default groups): one that cannot be counted is skipped
// with one warning naming the member and why, and added to `skipped` when given; otherwise it is
// a ConfigError naming where it was listed, the group, the member, the event and why. A group is
// never split.
std::vector<PlannedGroup> countable_groups(const std::vector<events::GroupDefinition>& groups,
                                           const GroupProbe& probe, bool best_effort,
                                           std::vector<PlannedGroup>* skipped = nullptr);

// "group ipc: countable (perf::INSTRUCTIONS, perf::CYCLES)" or
// "group ipc: NOT countable: ins (perf::INSTRUCTIONS: <reason>)".
std::string group_check_line(const PlannedGroup& group);

// The counted groups' members as the collector exports them: the chosen event under the
// member's metric, with a HELP that holds for every group counting it (the family is shared).
std::vector<ExportedGroup> exported_groups(const std::vector<PlannedGroup>& groups);

// --check-config's group lines: every built-in group, counted here or not (so that the report
// shows what this machine can count), then the user's groups counted ("; counted" on each
// line of a group the configuration counts).
std::vector<std::string> group_report_lines(const std::vector<PlannedGroup>& counted,
                                            const GroupProbe& probe);

}  // namespace hwperf::papi
