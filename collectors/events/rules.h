// Derived metrics out of the exporter's process: the formulas of event groups as Prometheus
// recording rules (--print-rules), so that a ratio is computed over any window in PromQL from
// the raw counters, as Prometheus users expect, and never as a lifetime average inside the
// exporter. Each variable of a formula becomes the rate of its member's family in the group's
// series (`group` label), summed at each aggregation level before the formula combines them:
// the IPC of a package is its instructions over its cycles, not an average of CPUs' IPCs.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "collectors/events/groups.h"

namespace hwperf::events {

// One aggregation level: the labels kept (besides instance and job) and the level part of the
// record name, as Prometheus' naming convention writes it (level:metric:operations).
struct RuleLevel {
  std::string record_level;     // "instance_cpu"
  std::vector<std::string> by;  // "cpu", "core", "package", "numa_node"
};

// Where a collector's groups are exported: hwperf_<family_level>_<metric>_total, and the levels
// worth a rule, finest first.
struct RuleScope {
  std::string family_level;  // "cpu", "package", "process", "container"
  std::vector<RuleLevel> levels;
  std::vector<GroupDefinition> groups;
};

struct RecordingRule {
  std::string record;  // "instance_cpu:hwperf_cpu_ipc:rate1m"
  std::string expr;
  std::string comment;  // what it is and its formula, written above the rule
};

// One rule per formula and level. `window` is a PromQL duration ("1m").
std::vector<RecordingRule> recording_rules(const RuleScope& scope, std::string_view window);

// A whole rule file (promtool check rules reads it): one rule group per scope and group.
std::string rule_file(const std::vector<RuleScope>& scopes, std::string_view window);

}  // namespace hwperf::events
