// What a counting collector is asked to count, as its configuration says it: events, event
// groups, the level counts are summed to and the privilege domain counted. A leaf of the events
// layer: the vocabulary, the perf interface and every counting collector's settings take these
// types from here, and it includes nothing of config/ (each collector's settings and their
// reading live in its own folder, collectors/<name>/<name>_config.h).
#pragma once

#include <string>
#include <vector>

#include "common/enum_names.h"
#include "common/source_mark.h"

namespace hwperf {

// One event as a configuration names it: a PAPI preset, a native event or a kernel event, with
// the family it is exported in and its HELP when the user chose them.
struct EventSpec {
  std::string event;   // PAPI preset or native name, with qualifiers
  std::string metric;  // optional metric base name ("" = derived from the event)
  std::string help;    // optional HELP text ("" = derived from PAPI's description)
  SourceMark mark;
};

// An event group (collectors/events/groups.h): events the kernel schedules together, so that
// the ratios of their counts are ratios over the same time, and the formulas that combine them.
// Built-in groups are named only (`collectors.papi.groups: [ipc]`); user groups are defined
// under the top-level `groups:` key.
struct GroupEventConfig {
  std::string variable;  // the name formulas use: "ins"
  EventSpec event;
};
struct GroupMetricConfig {
  std::string name;  // "ipc": recorded as <level>:hwperf_<name>:rate<window>
  std::string expr;  // "ins / cyc": +, -, *, /, parentheses, numbers, the group's variables
  std::string help;
  SourceMark mark;
};
struct GroupConfig {
  std::string name;
  std::vector<GroupEventConfig> events;
  std::vector<GroupMetricConfig> metrics;
  SourceMark mark;
};
// The top-level `groups:` of a configuration: the user's groups, beside the built-in ones.
struct GroupsConfig {
  std::vector<GroupConfig> groups;
};
// One name in a collector's `groups:` list, with where it was written.
struct GroupRef {
  std::string name;
  SourceMark mark;
};

// Where counts are summed to: per CPU, core, package or for the machine.
enum class Granularity { cpu, core, package, machine };
// Which privilege levels an event counts: user mode, kernel mode, or both.
enum class CountingDomain { user, kernel, all };

// Their spellings in a configuration file, one table each, which reading, dumping and printing
// use alike.
inline constexpr EnumName<Granularity> kGranularityNames[] = {{Granularity::cpu, "cpu"},
                                                              {Granularity::core, "core"},
                                                              {Granularity::package, "package"},
                                                              {Granularity::machine, "machine"}};
inline constexpr EnumName<CountingDomain> kCountingDomainNames[] = {
    {CountingDomain::user, "user"},
    {CountingDomain::kernel, "kernel"},
    {CountingDomain::all, "all"}};
inline const char* to_string(Granularity value) { return name_of(kGranularityNames, value); }
inline const char* to_string(CountingDomain value) { return name_of(kCountingDomainNames, value); }

}  // namespace hwperf
