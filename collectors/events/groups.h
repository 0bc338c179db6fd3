// Event groups: events the kernel schedules together (one PAPI event set or one perf group,
// leader and members, per CPU, thread or cgroup), so that the ratio of two of their counts is a
// ratio over the same time even when the kernel multiplexes; and the formulas that combine them,
// written once and used by the recording rules (--print-rules, rules.h) and the summary of
// experiment mode. A group is never split: if its events cannot be on the counters together it
// is rotated as a unit, and one that can never fit is refused.
//
// Every counting collector takes a `groups:` list of names: built-in groups (builtin_groups.cpp,
// the formulas with where they come from) and the user's, from the top-level `groups:`. Events
// of a group are exported in the collector's usual counter families, under the member's metric
// name, with a `group` label: the same event in two groups is counted twice, once in each, and
// a formula only ever divides series of one group.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/events/formula.h"
#include "collectors/events/vocabulary.h"
#include "collectors/events/specs.h"

namespace hwperf::events {

// One event of a group: the name formulas use, the metric it is exported as (without level or
// "_total"), and the events that may count it, in order of preference: a built-in group names
// the event of each vendor and the kernel's generic one, and the first this machine has is
// counted; a user's group names exactly one.
struct GroupMember {
  std::string variable;
  std::string metric;
  Unit unit = Unit::count;
  std::vector<EventSpec> candidates;
};

struct GroupMetric {
  std::string name;  // "ipc"
  Formula formula;
  std::string help;
};

struct GroupDefinition {
  std::string name;
  std::string where;  // "file:line:column: collectors.papi.groups" where it was named, or ""
  bool builtin = false;
  std::string meaning;  // one line: what the group measures
  std::string source;   // where its formulas come from (built-in groups)
  std::vector<GroupMember> members;
  std::vector<GroupMetric> metrics;
};

// The built-in groups, in the order --check-config lists them.
std::vector<GroupDefinition> builtin_groups();
// The names of builtin_groups(), for messages.
std::vector<std::string> builtin_group_names();

// The groups a collector counts: `refs` by name (a built-in group, or one of `user`), or the
// `default_names` when the configuration named none. Throws ConfigError listing every problem
// (file:line:column): unknown names, a user group named like a built-in one, a formula that does
// not parse or reads a variable its group lacks, a metric or member named twice.
std::vector<GroupDefinition> group_definitions(const std::vector<GroupRef>& refs, bool refs_given,
                                               const std::vector<std::string>& default_names,
                                               const std::vector<GroupConfig>& user,
                                               const std::string& config_path);

// What probing one candidate found: "" when this machine can count it, else why not. A candidate
// is `elsewhere` when it is not an event of this machine at all (libpfm4 or the kernel's sysfs
// cannot encode it: another vendor's event, a sysfs PMU or event this kernel lacks), as opposed to
// one of this machine's own events that cannot be opened here (no PMU in a VM, no permission).
struct CandidateVerdict {
  std::string reason;  // the whole sentence, with the remedy
  std::string cause;   // short and stable, for a metric's label: "ENOENT (No such file ...)"
  bool elsewhere = false;
};

// The event each member counts on this machine: the first candidate `judge` finds countable.
// When a member has none, the group is counted whole or not at all: `events` is empty and
// `unavailable` says why, from the first candidate this machine has (on AMD, AMD's event, not
// Intel's listed before it); when none is one of this machine's, it names `this_machine` (its
// PMU, pfm_encoder.h) and every candidate tried. A single candidate's own reason is given as it is.
struct MemberChoice {
  std::vector<EventSpec> events;  // per member
  std::string unavailable;        // "" or "<member> (<event>: <reason>)"
  // The parts of `unavailable`: the member, the event whose reason it gives (every candidate,
  // comma-separated, when none is this machine's) and a short cause.
  std::string member;
  std::string event;
  std::string cause;
};
MemberChoice choose_members(const GroupDefinition& group,
                            const std::function<CandidateVerdict(const EventSpec&)>& judge,
                            const std::string& this_machine);

// The HELP of a member's family: what the event is, and that it is counted in a group.
std::string member_help(const GroupDefinition& group, const GroupMember& member);

}  // namespace hwperf::events
