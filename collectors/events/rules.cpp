#include "collectors/events/rules.h"

#include <algorithm>

#include "collectors/metrics.h"
#include "common/text.h"

namespace hwperf::events {
namespace {

std::vector<RecordingRule> group_rules(const RuleScope& scope, const GroupDefinition& group,
                                       std::string_view window) {
  std::vector<RecordingRule> rules;
  for (const auto& level : scope.levels) {
    std::vector<std::string> by = {"instance", "job"};
    by.insert(by.end(), level.by.begin(), level.by.end());
    const std::string sum_by = "sum by (" + join(by) + ") ";
    for (const auto& metric : group.metrics) {
      const auto term = [&](const std::string& variable) {
        const auto member = std::find_if(group.members.begin(), group.members.end(),
                                         [&](const auto& m) { return m.variable == variable; });
        const std::string family = counter_name({scope.family_level, member->metric});
        return sum_by + "(rate(" + family + "{group=\"" + group.name + "\"}[" +
               std::string(window) + "]))";
      };
      RecordingRule rule;
      rule.record = level.record_level + ":" + metric_name({scope.family_level, metric.name}) +
                    ":rate" + std::string(window);
      rule.expr = metric.formula.promql(term);
      rule.comment = metric.help + " Group " + group.name + ": " + metric.formula.text() + ".";
      rules.push_back(std::move(rule));
    }
  }
  return rules;
}

}  // namespace

std::vector<RecordingRule> recording_rules(const RuleScope& scope, std::string_view window) {
  std::vector<RecordingRule> rules;
  for (const auto& group : scope.groups) {
    auto more = group_rules(scope, group, window);
    rules.insert(rules.end(), more.begin(), more.end());
  }
  return rules;
}

std::string rule_file(const std::vector<RuleScope>& scopes, std::string_view window) {
  std::string text =
      "# Recording rules for hwperf_exporter's event groups, written by hwperf_exporter\n"
      "# --print-rules from the groups its configuration counts (docs/collectors/groups.md).\n"
      "# Each formula's variables are rates over " +
      std::string(window) +
      " of the group's own series (label group), summed at\n"
      "# each level before the formula combines them; a divisor of 0 records nothing.\n"
      "groups:\n";
  bool any = false;
  for (const auto& scope : scopes) {
    for (const auto& group : scope.groups) {
      if (group.metrics.empty() || scope.levels.empty()) continue;
      any = true;
      text += "  - name: hwperf_" + scope.family_level + "_" + group.name + "\n    rules:\n";
      for (const auto& rule : group_rules(scope, group, window)) {
        text += "      # " + rule.comment + "\n";
        text += "      - record: " + rule.record + "\n";
        text += "        expr: '" + rule.expr + "'\n";
      }
    }
  }
  if (!any) text += "  []\n";
  return text;
}

}  // namespace hwperf::events
