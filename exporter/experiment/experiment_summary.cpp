// What the summary of `--once -- CMD` says, as perf stat says it: the counts, then the derived
// metrics of the event groups (perf stat's "shadow" metrics), each formula written once in the
// events layer and evaluated here over each run. experiment_report.cpp writes it.
#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "collectors/metrics.h"
#include "common/text.h"
#include "exporter/experiment/experiment.h"

namespace hwperf {
namespace {

constexpr std::string_view kLevel = "process";

std::string label_of(const prometheus::ClientMetric& metric, const std::string& name) {
  for (const auto& label : metric.label) {
    if (label.name == name) return label.value;
  }
  return "";
}

// The target's counters: (family, group) -> the sum of its series (per CPU, per pid...). An
// event counted in two groups is two kernel counters, so two entries.
using Sums = std::map<std::pair<std::string, std::string>, double>;

Sums target_sums(const std::vector<prometheus::MetricFamily>& families, const std::string& target) {
  Sums sums;
  const std::string prefix = "hwperf_" + std::string(kLevel) + "_";
  for (const auto& family : families) {
    if (family.name.rfind(prefix, 0) != 0 || family.type != prometheus::MetricType::Counter) {
      continue;
    }
    for (const auto& metric : family.metric) {
      if (label_of(metric, "target") != target) continue;
      sums[{family.name, label_of(metric, "group")}] += metric.counter.value;
    }
  }
  return sums;
}

// Families that are about the counting rather than counts of an event.
bool is_event_count(const std::string& family) {
  for (const char* part : {"_event_", "_group_enabled_", "_group_running_"}) {
    if (family.find(part) != std::string::npos) return false;
  }
  return family != counter_name({kLevel, "read_errors"});
}

// The line of (kind, name, group, formula), added when no run had it yet: the runs of --repeat
// add to the same lines.
SummaryLine& line_of(ExperimentSummary& summary, SummaryLine::Kind kind, const std::string& name,
                     const std::string& group, const std::string& formula) {
  for (auto& line : summary.lines) {
    if (line.kind == kind && line.name == name && line.group == group && line.formula == formula) {
      return line;
    }
  }
  SummaryLine line;
  line.kind = kind;
  line.name = name;
  line.group = group;
  line.formula = formula;
  // A line a later run adds has no value in the runs before it.
  line.values.resize(summary.runs.size());
  summary.lines.push_back(std::move(line));
  return summary.lines.back();
}

void add_counts(ExperimentSummary& summary, const Sums& sums) {
  const std::string prefix = "hwperf_" + std::string(kLevel) + "_";
  for (const auto& [key, value] : sums) {
    const auto& [family, group] = key;
    if (!is_event_count(family)) continue;
    std::string name = family.substr(prefix.size());
    name = name.substr(0, name.size() - std::string("_total").size());
    auto& line = line_of(summary, SummaryLine::Kind::event, name, group, "");
    line.seconds = ends_with(family, "_seconds_total");
    if (const auto why = summary.not_measured.find(name); why != summary.not_measured.end()) {
      line.not_measured = why->second;  // a 0 the kernel could not have counted otherwise
      continue;
    }
    line.values.back() = value;
  }
}

// "CPUs utilized" from "CPUs utilized: seconds of CPU time per second.": the metric's help up to
// its explanation, as perf stat names a shadow metric in a few words.
std::string short_name(const events::GroupMetric& metric) {
  std::string name = metric.help.empty() ? metric.name : metric.help;
  if (const auto colon = name.find(": "); colon != std::string::npos) name.resize(colon);
  if (ends_with(name, ".")) name.pop_back();
  return name;
}

// The share of the run the group was on the counters, when the kernel multiplexed it.
std::string multiplexed_note(const Sums& sums, const std::string& group) {
  const auto enabled = sums.find({counter_name({kLevel, "group_enabled_seconds"}), group});
  const auto running = sums.find({counter_name({kLevel, "group_running_seconds"}), group});
  if (enabled == sums.end() || running == sums.end() || enabled->second <= 0) return "";
  const double share = running->second / enabled->second;
  if (share >= 0.9995) return "";
  char text[64];
  std::snprintf(text, sizeof text, "  (on the counters %.1f%% of the time)", 100 * share);
  return text;
}

// Why a formula has no value although its group was counted: the first variable it reads whose
// member is not measured here ("context_switches: counted in kernel mode only ..."), or "".
std::string formula_not_measured(const ExperimentSummary& summary,
                                 const events::GroupDefinition& group,
                                 const events::GroupMetric& metric) {
  for (const auto& variable : metric.formula.variables()) {
    for (const auto& member : group.members) {
      if (member.variable != variable) continue;
      if (const auto why = summary.not_measured.find(member.metric);
          why != summary.not_measured.end()) {
        return member.metric + " " + why->second;
      }
    }
  }
  return "";
}

void add_group(ExperimentSummary& summary, const Sums& sums, const events::GroupDefinition& group,
               double seconds) {
  // Each variable is its member's count per second of the run; a member with no series in this
  // group was not counted (the group is counted whole or not at all).
  std::map<std::string, double> values;
  bool counted = true;
  for (const auto& member : group.members) {
    const auto found = sums.find({counter_name({kLevel, member.metric}), group.name});
    if (found == sums.end()) {
      counted = false;
      break;
    }
    values[member.variable] = seconds > 0 ? found->second / seconds : 0;
  }
  const std::string note = counted ? multiplexed_note(sums, group.name) : "";
  for (const auto& metric : group.metrics) {
    auto& line = line_of(summary, SummaryLine::Kind::metric, short_name(metric), group.name,
                         metric.formula.text());
    line.counted = line.counted && counted;
    line.note = note;
    // A formula that reads a member the kernel cannot count here would show that member's 0.
    if (counted) line.not_measured = formula_not_measured(summary, group, metric);
    // No value where a divisor was 0 (no cycles: no IPC, rather than an infinite one).
    if (counted && line.not_measured.empty()) {
      line.values.back() = metric.formula.evaluate(values);
    }
  }
}

// Why the kernel counted less than configured (hwperf_process_domain_narrowed's reason).
std::string narrowed_reason(const std::vector<prometheus::MetricFamily>& families) {
  for (const auto& family : families) {
    if (family.name != metric_name({kLevel, "domain_narrowed"})) continue;
    for (const auto& metric : family.metric) {
      if (const auto reason = label_of(metric, "reason"); !reason.empty()) return reason;
    }
  }
  return "";
}

// The per-thread region families of the target (hwperf_region_thread_*) as one table per region:
// calls and seconds first, then the events in the order of their families.
void add_regions(ExperimentSummary& summary, const std::vector<prometheus::MetricFamily>& families,
                 const std::string& target) {
  const std::string prefix = metric_name({"region", "thread"}) + "_";
  std::vector<std::string> columns = {"calls", "seconds"};
  // region -> tid -> column -> value
  std::map<std::string, std::map<std::string, std::map<std::string, double>>> values;
  for (const auto& family : families) {
    if (family.name.rfind(prefix, 0) != 0 || !ends_with(family.name, "_total")) continue;
    std::string column = family.name.substr(prefix.size());
    column.resize(column.size() - std::string("_total").size());
    if (std::find(columns.begin(), columns.end(), column) == columns.end()) {
      columns.push_back(column);
    }
    for (const auto& metric : family.metric) {
      if (label_of(metric, "target") != target) continue;
      values[label_of(metric, "region")][label_of(metric, "tid")][column] = metric.counter.value;
    }
  }
  for (const auto& [region, threads] : values) {
    RegionTable table;
    table.run = summary.runs.size();
    table.region = region;
    table.columns = columns;
    RegionTable::Row sum{"sum", std::vector<double>(columns.size(), 0.0)};
    for (const auto& [tid, by_column] : threads) {
      RegionTable::Row row{tid, {}};
      for (std::size_t c = 0; c < columns.size(); ++c) {
        const auto found = by_column.find(columns[c]);
        row.values.push_back(found == by_column.end() ? 0.0 : found->second);
        sum.values[c] += row.values.back();
      }
      table.rows.push_back(std::move(row));
    }
    table.rows.push_back(std::move(sum));
    summary.regions.push_back(std::move(table));
  }
}

}  // namespace

void add_run(ExperimentSummary& summary, const std::vector<prometheus::MetricFamily>& families,
             const std::vector<events::RuleScope>& scopes, const std::string& target,
             ExperimentRun run) {
  summary.runs.push_back(run);
  for (auto& line : summary.lines) line.values.emplace_back();
  const Sums sums = target_sums(families, target);
  add_counts(summary, sums);
  for (const auto& scope : scopes) {
    if (scope.family_level != kLevel) continue;
    for (const auto& group : scope.groups) add_group(summary, sums, group, run.seconds);
  }
  if (const auto note = narrowed_reason(families); !note.empty()) summary.note = note;
  add_regions(summary, families, target);
}

std::vector<RegionOverRuns> regions_over_runs(const ExperimentSummary& summary) {
  std::vector<RegionOverRuns> regions;
  const std::size_t runs = summary.runs.size();
  for (const auto& table : summary.regions) {
    auto found = std::find_if(regions.begin(), regions.end(),
                              [&](const RegionOverRuns& r) { return r.region == table.region; });
    if (found == regions.end()) {
      regions.push_back({table.region, {}, {}});
      found = std::prev(regions.end());
    }
    const auto& sum = table.rows.back();  // add_regions ends each table with its sum
    for (std::size_t c = 0; c < table.columns.size() && c < sum.values.size(); ++c) {
      auto column = std::find(found->columns.begin(), found->columns.end(), table.columns[c]);
      if (column == found->columns.end()) {
        found->columns.push_back(table.columns[c]);
        found->values.emplace_back(runs);
        column = std::prev(found->columns.end());
      }
      const auto index = static_cast<std::size_t>(column - found->columns.begin());
      if (table.run >= 1 && table.run <= runs) found->values[index][table.run - 1] = sum.values[c];
    }
  }
  return regions;
}

std::string experiment_summary(const std::vector<prometheus::MetricFamily>& families,
                               const std::vector<events::RuleScope>& scopes,
                               const std::string& target, const std::string& command_line,
                               int exit_code, double seconds) {
  ExperimentSummary summary;
  summary.command_line = command_line;
  add_run(summary, families, scopes, target, {exit_code, seconds});
  return format_summary(summary, SummaryFormat::text);
}

}  // namespace hwperf
