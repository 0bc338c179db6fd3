// What the summary of `--once -- CMD` needs to know besides the counts: the groups whose formulas
// it shows, and which of the process targets' metrics cannot count where the targets count user
// mode only, so that it says "not measured" rather than print a 0 the kernel never counted.
#include <algorithm>
#include <cctype>
#include <iterator>
#include <string_view>

#include "collectors/metrics.h"
#include "collectors/registry.h"
#include "exporter/experiment/experiment_run.h"

namespace hwperf {
namespace {

// perf's software events that count in kernel mode only: the scheduler raises them from its own
// code with the kernel's registers (perf_sw_event_sched: context switches in schedule(),
// migrations in set_task_cpu()), and perf_swevent_match drops an event for which
// perf_exclude_event finds exclude_kernel set and those registers not user mode
// (kernel/events/core.c). Under :u, perf stat shows them <not counted>. Each with the metric the
// events layer names it by default (events::default_metric_base; test_experiment_modes.cpp checks
// that the two agree).
struct KernelModeOnlyEvent {
  std::string_view base;  // as perf:: spells it, upper case
  std::string_view metric;
};
constexpr KernelModeOnlyEvent kKernelModeOnly[] = {{"CONTEXT-SWITCHES", "context_switches"},
                                                   {"CS", "cs"},
                                                   {"CPU-MIGRATIONS", "migrations"},
                                                   {"MIGRATIONS", "migrations"}};
constexpr const char* kNotMeasured = "counts in kernel mode only: not measured in user mode";

std::string upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// How an event's own qualifiers (u, k, u=1, k=0 ...: libpfm4 counts the levels whose qualifier
// is bare or true) choose its levels: none given (the collector's domain decides), kernel mode
// among them, or user mode only.
enum class OwnLevels { none, with_kernel, user_only };

// "perf::CONTEXT-SWITCHES:u" -> the table's entry and its own levels; nullptr for other events.
const KernelModeOnlyEvent* kernel_mode_only(const std::string& event, OwnLevels& levels) {
  const auto separator = event.find("::");
  if (separator == std::string::npos || upper(event.substr(0, separator)) != "PERF") return nullptr;
  std::string_view rest = std::string_view(event).substr(separator + 2);
  const std::string base = upper(rest.substr(0, rest.find(':')));
  const auto found = std::find_if(std::begin(kKernelModeOnly), std::end(kKernelModeOnly),
                                  [&](const KernelModeOnlyEvent& e) { return e.base == base; });
  if (found == std::end(kKernelModeOnly)) return nullptr;
  bool qualified = false, kernel = false;
  for (auto at = rest.find(':'); at != std::string_view::npos; at = rest.find(':', at + 1)) {
    const std::string qualifier = upper(rest.substr(at + 1, rest.find(':', at + 1) - at - 1));
    const char level = qualifier.empty() ? '\0' : qualifier[0];
    if ((level != 'U' && level != 'K') || (qualifier.size() > 1 && qualifier[1] != '=')) continue;
    qualified = true;
    const bool on = qualifier.size() == 1 || qualifier.find_first_of("1YT", 2) == 2;
    kernel = kernel || (level == 'K' && on);
  }
  levels = !qualified ? OwnLevels::none : kernel ? OwnLevels::with_kernel : OwnLevels::user_only;
  return &*found;
}

void add_event(SummaryPlan& plan, const std::string& event, const std::string& metric) {
  OwnLevels levels = OwnLevels::none;
  const KernelModeOnlyEvent* found = kernel_mode_only(event, levels);
  if (found == nullptr || levels == OwnLevels::with_kernel) return;
  const std::string name = metric.empty() ? std::string(found->metric) : metric;
  (levels == OwnLevels::user_only ? plan.user_mode_only : plan.kernel_mode_only).push_back(name);
}

}  // namespace

std::optional<std::string> kernel_mode_only_metric(const std::string& event) {
  OwnLevels levels = OwnLevels::none;
  const KernelModeOnlyEvent* found = kernel_mode_only(event, levels);
  if (found == nullptr) return std::nullopt;
  return std::string(found->metric);
}

SummaryPlan summary_plan(const Config& config) {
  SummaryPlan plan;
  plan.scopes = collector_rule_scopes(config);
  plan.user_mode_configured = experiment_user_mode_only(config);
  for (const auto& event : experiment_events(config)) add_event(plan, event.event, event.metric);
  for (const auto& scope : plan.scopes) {
    if (scope.family_level != "process") continue;
    for (const auto& group : scope.groups) {
      for (const auto& member : group.members) {
        for (const auto& candidate : member.candidates) {
          add_event(plan, candidate.event, member.metric);
        }
      }
    }
  }
  return plan;
}

std::map<std::string, std::string> not_measured(
    const SummaryPlan& plan, const std::vector<prometheus::MetricFamily>& families) {
  bool user_mode = plan.user_mode_configured;
  for (const auto& family : families) {
    if (family.name != metric_name({"process", "domain_narrowed"})) continue;
    for (const auto& metric : family.metric) {
      for (const auto& label : metric.label) {
        user_mode =
            user_mode || (label.name == "domain" &&
                          label.value == name_of(kCountingDomainNames, CountingDomain::user));
      }
    }
  }
  std::map<std::string, std::string> metrics;
  for (const auto& metric : plan.user_mode_only) metrics[metric] = kNotMeasured;
  if (user_mode) {
    for (const auto& metric : plan.kernel_mode_only) metrics[metric] = kNotMeasured;
  }
  return metrics;
}

}  // namespace hwperf
