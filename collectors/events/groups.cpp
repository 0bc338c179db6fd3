#include "collectors/events/groups.h"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include "collectors/events/event_specs.h"
#include "common/text.h"
#include "config/errors.h"

namespace hwperf::events {
namespace {

std::string variables_of(const GroupConfig& config) {
  std::vector<std::string> names;
  for (const auto& event : config.events) names.push_back(event.variable);
  return join(names);
}

// A user's group as the events layer counts it: each member's metric named as an ungrouped
// event's would be, every formula parsed and its variables checked against the members.
GroupDefinition user_group(const GroupConfig& config, std::vector<std::string>& problems) {
  GroupDefinition group;
  group.name = config.name;
  group.where = config.mark.to_string();
  group.meaning = "the user's group " + config.name;
  std::set<std::string> metrics;
  for (const auto& event : config.events) {
    const std::string where =
        event.event.mark.to_string() + ": groups." + config.name + ".events." + event.variable;
    GroupMember member;
    member.variable = event.variable;
    member.metric = metric_base_of(event.event, where, problems);
    member.unit = event_unit(event.event.event);
    member.candidates = {event.event};
    if (member.metric.empty()) continue;
    if (!metrics.insert(member.metric).second) {
      problems.push_back(where + ": exported as " + member.metric +
                         ", like another event of the group; give one of them a `metric:` name");
      continue;
    }
    group.members.push_back(std::move(member));
  }
  for (const auto& metric : config.metrics) {
    const std::string where =
        metric.mark.to_string() + ": groups." + config.name + ".metrics." + metric.name;
    try {
      Formula formula = Formula::parse(metric.expr);
      std::vector<std::string> unknown;
      for (const auto& variable : formula.variables()) {
        const bool known = std::any_of(config.events.begin(), config.events.end(),
                                       [&](const auto& e) { return e.variable == variable; });
        if (!known) unknown.push_back(variable);
      }
      if (!unknown.empty()) {
        problems.push_back(where + ".expr: \"" + metric.expr + "\" reads " + join(unknown) +
                           ", which the group does not count (its events: " + variables_of(config) +
                           ")");
        continue;
      }
      group.metrics.push_back({metric.name, std::move(formula),
                               metric.help.empty()
                                   ? "The formula " + metric.expr + " of group " + config.name + "."
                                   : metric.help});
    } catch (const std::invalid_argument& e) {
      problems.push_back(where + ".expr: \"" + metric.expr + "\" is not a formula: " + e.what() +
                         " (use + - * / and parentheses over the group's event names)");
    }
  }
  return group;
}

}  // namespace

std::vector<GroupDefinition> group_definitions(const std::vector<GroupRef>& refs, bool refs_given,
                                               const std::vector<std::string>& default_names,
                                               const std::vector<GroupConfig>& user,
                                               const std::string& config_path) {
  std::vector<std::string> problems;
  const auto builtin = builtin_groups();
  const auto builtin_names = builtin_group_names();
  for (const auto& group : user) {
    if (std::find(builtin_names.begin(), builtin_names.end(), group.name) != builtin_names.end()) {
      problems.push_back(group.mark.to_string() + ": groups." + group.name +
                         ": a built-in group has this name; name yours otherwise");
    }
  }
  std::vector<GroupRef> wanted = refs;
  if (!refs_given) {
    wanted.clear();
    for (const auto& name : default_names) wanted.push_back({name, {}});
  }
  std::vector<GroupDefinition> groups;
  for (const auto& ref : wanted) {
    const std::string where =
        ref.mark.line != 0 ? ref.mark.to_string() + ": " + config_path : config_path;
    const auto in_builtin = std::find_if(builtin.begin(), builtin.end(),
                                         [&](const auto& group) { return group.name == ref.name; });
    if (in_builtin != builtin.end()) {
      groups.push_back(*in_builtin);
      groups.back().where = where;
      continue;
    }
    const auto in_user = std::find_if(user.begin(), user.end(),
                                      [&](const auto& group) { return group.name == ref.name; });
    if (in_user == user.end()) {
      std::vector<std::string> mine;
      for (const auto& group : user) mine.push_back(group.name);
      problems.push_back(where + ": no group is named \"" + ref.name +
                         "\" (built-in: " + join(builtin_names) +
                         (mine.empty() ? "" : "; yours, under groups: " + join(mine)) + ")");
      continue;
    }
    groups.push_back(user_group(*in_user, problems));
    groups.back().where = where;
  }
  // A metric is recorded as <level>:hwperf_<collector level>_<metric>:rate<window>: two groups
  // of one collector with a metric of the same name would record one series twice.
  std::map<std::string, std::string> metric_owner;
  for (const auto& group : groups) {
    for (const auto& metric : group.metrics) {
      const auto [owner, added] = metric_owner.emplace(metric.name, group.name);
      if (!added && owner->second != group.name) {
        problems.push_back(group.where + ": groups " + owner->second + " and " + group.name +
                           " both have a metric named " + metric.name +
                           ", which a recording rule names alone; rename one of them");
      }
    }
  }
  if (!problems.empty()) throw ConfigError(problems);
  return groups;
}

MemberChoice choose_members(const GroupDefinition& group,
                            const std::function<CandidateVerdict(const EventSpec&)>& judge,
                            const std::string& this_machine) {
  MemberChoice choice;
  for (const auto& member : group.members) {
    std::vector<std::pair<std::string, CandidateVerdict>> refused;  // candidate, verdict
    bool chosen = false;
    for (const auto& candidate : member.candidates) {
      CandidateVerdict verdict = judge(candidate);
      if (verdict.reason.empty()) {
        choice.events.push_back(candidate);
        chosen = true;
        break;
      }
      refused.emplace_back(candidate.event, std::move(verdict));
    }
    if (chosen) continue;
    choice.events.clear();
    choice.member = member.variable;
    // The first this machine has; else the only one there is.
    auto given = std::find_if(refused.begin(), refused.end(),
                              [](const auto& entry) { return !entry.second.elsewhere; });
    if (given == refused.end() && refused.size() == 1) given = refused.begin();
    if (given != refused.end()) {
      choice.event = given->first;
      choice.cause = given->second.cause;
      choice.unavailable =
          member.variable + " (" + given->first + ": " + given->second.reason + ")";
      return choice;
    }
    std::vector<std::string> tried;
    for (const auto& entry : refused) tried.push_back(entry.first);
    choice.event = join(tried);
    choice.cause = refused.empty() ? "no events" : refused.front().second.cause;
    choice.unavailable = member.variable +
                         " (none of its events is one this machine has: " + this_machine +
                         "; tried " + join(tried) + ")";
    return choice;
  }
  return choice;
}

std::string member_help(const GroupDefinition& group, const GroupMember& member) {
  std::string text = "Event " + member.variable + " of group " + group.name + " (" + group.meaning +
                     "), counted together with the group's other events";
  if (member.unit == Unit::nanoseconds) text += "; seconds, converted from the event's nanoseconds";
  return text + ".";
}

}  // namespace hwperf::events
