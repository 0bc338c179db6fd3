// The summary of `--once -- CMD` on stderr, as perf stat prints it: the counts, then the derived
// metrics of the event groups (perf stat's "shadow" metrics), each formula written once in the
// events layer and evaluated here over the whole run.
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "collectors/metrics.h"
#include "common/text.h"
#include "exporter/experiment.h"

namespace hwperf {
namespace {

constexpr std::string_view kLevel = "process";

std::string grouped(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%.0f", value);
  std::string digits = text, out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0 && digits[i - 1] != '-') out += ',';
    out += digits[i];
  }
  return out;
}

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

std::string count_lines(const Sums& sums) {
  const std::string prefix = "hwperf_" + std::string(kLevel) + "_";
  std::string text;
  for (const auto& [key, value] : sums) {
    const auto& [family, group] = key;
    if (!is_event_count(family)) continue;
    std::string name = family.substr(prefix.size());
    name = name.substr(0, name.size() - std::string("_total").size());
    if (!group.empty()) name += "  [" + group + "]";
    char line[200];
    if (ends_with(family, "_seconds_total")) {
      std::snprintf(line, sizeof line, "%20.6f  %s\n", value, name.c_str());
    } else {
      std::snprintf(line, sizeof line, "%20s  %s\n", grouped(value).c_str(), name.c_str());
    }
    text += line;
  }
  return text;
}

// "CPUs utilized" from "CPUs utilized: seconds of CPU time per second.": the metric's help up to
// its explanation, as perf stat names a shadow metric in a few words.
std::string short_name(const events::GroupMetric& metric) {
  std::string name = metric.help.empty() ? metric.name : metric.help;
  if (const auto colon = name.find(": "); colon != std::string::npos) name.resize(colon);
  if (ends_with(name, ".")) name.pop_back();
  return name;
}

std::string value_text(double value) {
  if (value >= 1e6 || value <= -1e6) return grouped(value);
  char text[64];
  std::snprintf(text, sizeof text, "%.3f", value);
  return text;
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

std::string group_lines(const Sums& sums, const events::GroupDefinition& group, double seconds) {
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
  std::string text;
  for (const auto& metric : group.metrics) {
    std::optional<double> value;
    if (counted) value = metric.formula.evaluate(values);
    // No value where a divisor was 0 (no cycles: no IPC, rather than an infinite one).
    const std::string shown = !counted ? "not counted" : value ? value_text(*value) : "-";
    char line[400];
    std::snprintf(line, sizeof line, "%20s  %s  (%s: %s)%s\n", shown.c_str(),
                  short_name(metric).c_str(), group.name.c_str(), metric.formula.text().c_str(),
                  note.c_str());
    text += line;
  }
  return text;
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

}  // namespace

std::string experiment_summary(const std::vector<prometheus::MetricFamily>& families,
                               const std::vector<events::RuleScope>& scopes,
                               const std::string& target, const std::string& command_line,
                               int exit_code, double seconds) {
  const Sums sums = target_sums(families, target);
  std::string text = "\n Performance counter stats for '" + command_line + "':\n\n";
  text += count_lines(sums);
  std::string derived;
  for (const auto& scope : scopes) {
    if (scope.family_level != kLevel) continue;
    for (const auto& group : scope.groups) derived += group_lines(sums, group, seconds);
  }
  if (!derived.empty()) text += "\n" + derived;
  char line[160];
  std::snprintf(line, sizeof line, "\n%20.6f  seconds elapsed; exit status %d\n", seconds,
                exit_code);
  text += line;
  if (const auto note = narrowed_reason(families); !note.empty()) text += "  note: " + note + "\n";
  return text;
}

}  // namespace hwperf
