#include "collectors/papi/papi_groups.h"

#include <linux/perf_event.h>
#include <papi.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <stdexcept>

#include "collectors/events/event_specs.h"
#include "collectors/events/vocabulary.h"
#include "collectors/papi/papi_remedies.h"
#include "collectors/perf/pfm_encoder.h"
#include "collectors/perf/pmu_sysfs.h"
#include "common/log.h"
#include "common/text.h"
#include "config/errors.h"

namespace hwperf::papi {
namespace {

// Why the kernel would not open a counter, with what to do about it. Without a hardware PMU
// (a VM without PMU passthrough) the kernel lists no `cpu` PMU in sysfs, and every hardware
// event fails with ENOENT: said plainly, since that is the common case in CI and clouds.
// The kernel's PMU of the CPU cores: x86's "cpu" (hybrid Intel's "cpu_core" and "cpu_atom"),
// arm64's "armv8_pmuv3_N", "armv8_cortex_*", "armv8_neoverse_*" and "armv9_*"
// (drivers/perf/arm_pmuv3.c names them after the core).
bool has_core_pmu(const std::string& devices) {
  std::error_code ec;
  for (const char* name : {"cpu", "cpu_core", "cpu_atom"}) {
    if (std::filesystem::exists(devices + "/" + name, ec)) return true;
  }
  for (const auto& entry : std::filesystem::directory_iterator(devices, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("armv8_", 0) == 0 || name.rfind("armv9_", 0) == 0) return true;
  }
  return false;
}

std::string open_failure(const perf::EventEncoding& encoding, int error, const GroupProbe& probe) {
  const std::string text =
      "perf_event_open on CPU " + std::to_string(probe.cpu) + ": " + errno_text(error) + "; ";
  if (error == EACCES || error == EPERM) return text + remedy_for(PAPI_EPERM, probe.paths);
  const bool software = encoding.type == PERF_TYPE_SOFTWARE;
  const std::string devices = probe.paths.sysfs + "/bus/event_source/devices";
  if (!software && !has_core_pmu(devices)) {
    return text + "this machine has no hardware PMU (" + devices +
           " lists no core PMU: a VM without PMU passthrough?); only software events "
           "(perf::TASK-CLOCK, perf::PAGE-FAULTS, ...) can be counted here";
  }
  if (error == ENOENT || error == EOPNOTSUPP || error == ENODEV) {
    return text + remedy_for(PAPI_ENOEVNT, probe.paths);
  }
  return text + remedy_for(PAPI_EINVAL, probe.paths);
}

}  // namespace

perf::EventEncoding encode_member(const std::string& event, const GroupProbe& probe) {
  std::string counted = event;
  if (events::is_preset(event)) {
    const auto preset = probe.presets->lookup(event, probe.paths.procfs);
    if (preset && !preset->single_native().empty()) {
      counted = preset->single_native();
    } else if (const auto generic = events::generic_equivalent(event)) {
      counted = *generic;
    } else if (preset && preset->available && preset->native_terms > 1) {
      const auto& terms = preset->derivation.terms;
      throw std::invalid_argument(
          "PAPI derives " + event + " here from " + std::to_string(preset->native_terms) +
          " native events" + (terms.empty() ? "" : " (" + events::derivation_text(terms) + ")") +
          ", and a group member is one kernel counter; make each native event a member of its "
          "own (papi_avail -e " +
          event + " names them)");
    }
  }
  if (!perf::is_sysfs_event_name(counted)) {
    auto encoding = perf::encode_event(counted, probe.domain);
    encoding.name = event;
    return encoding;
  }
  try {
    auto encoding = perf::encode_sysfs_event(counted, probe.paths.sysfs, probe.domain);
    encoding.name = event;
    return encoding;
  } catch (const std::invalid_argument& e) {
    throw perf::UnknownEvent(e.what());  // this kernel has no such PMU or event
  }
}

PlannedGroup plan_group(const events::GroupDefinition& group, const GroupProbe& probe) {
  PlannedGroup planned;
  planned.definition = group;
  std::vector<perf::EventEncoding> chosen;
  const auto choice = events::choose_members(
      group,
      [&](const PapiEventConfig& candidate) {
        events::CandidateVerdict verdict;
        perf::EventEncoding encoding;
        try {
          encoding = encode_member(candidate.event, probe);
        } catch (const std::invalid_argument& e) {
          // choose_members names the candidate already.
          const std::string what = e.what();
          const std::string named = candidate.event + ": ";
          verdict.reason = what.rfind(named, 0) == 0 ? what.substr(named.size()) : what;
          verdict.elsewhere = dynamic_cast<const perf::UnknownEvent*>(&e) != nullptr;
          verdict.cause = verdict.elsewhere ? "not an event of this machine" : "not one counter";
          return verdict;
        }
        const auto opened = perf::open_counter(encoding, -1, probe.cpu);
        if (!opened.ok()) {
          verdict.reason = open_failure(encoding, opened.error, probe);
          verdict.cause = "perf_event_open: " + errno_text(opened.error);
          return verdict;
        }
        chosen.push_back(encoding);
        return verdict;
      },
      perf::core_pmu_text());
  if (!choice.unavailable.empty()) {
    planned.unavailable = choice.unavailable;
    planned.member = choice.member;
    planned.event = choice.event;
    planned.cause = choice.cause;
    return planned;
  }
  for (const auto& event : choice.events) planned.counted.push_back(event.event);
  planned.encodings = std::move(chosen);
  // Each member opens alone; together they must fit the PMU's counters at once. The kernel
  // refuses the member that cannot fit beside those before it with EINVAL (perf_event_open(2),
  // validate_group in arch/x86/events/core.c): such a group could never count.
  const auto group_open = perf::CounterGroup::open(planned.encodings, -1, probe.cpu);
  if (!group_open.ok()) {
    const std::size_t failed = group_open.value.failed_event();
    const auto& member = group.members.at(failed);
    planned.member = member.variable;
    planned.event = planned.counted[failed];
    planned.cause = group_open.error == EINVAL && failed > 0
                        ? "never on the counters together"
                        : "perf_event_open: " + errno_text(group_open.error);
    planned.unavailable =
        group_open.error == EINVAL && failed > 0
            ? "its " + std::to_string(planned.encodings.size()) +
                  " events can never be on the counters together: the kernel refused " +
                  member.variable + " (" + planned.counted[failed] + ") beside the " +
                  std::to_string(failed) + " before it (EINVAL); split it into smaller groups"
            : member.variable + " (" + planned.counted[failed] + ": " +
                  open_failure(planned.encodings[failed], group_open.error, probe) + ")";
    planned.counted.clear();
    planned.encodings.clear();
  }
  return planned;
}

std::vector<PlannedGroup> countable_groups(const std::vector<events::GroupDefinition>& groups,
                                           const GroupProbe& probe, bool best_effort,
                                           std::vector<PlannedGroup>* skipped) {
  std::vector<PlannedGroup> countable;
  std::vector<std::string> problems;
  for (const auto& group : groups) {
    auto planned = plan_group(group, probe);
    if (planned.unavailable.empty()) {
      countable.push_back(std::move(planned));
    } else if (best_effort) {
      log::warn("papi: not counting default group " + group.name + ": " + planned.unavailable +
                " (see hwperf_papi_group_dropped)");
      if (skipped != nullptr) skipped->push_back(std::move(planned));
    } else {
      problems.push_back((group.where.empty() ? "" : group.where + ": ") + "group " + group.name +
                         " cannot be counted here: " + planned.unavailable);
    }
  }
  if (!problems.empty()) throw ConfigError(std::move(problems));
  return countable;
}

std::string group_check_line(const PlannedGroup& group) {
  const std::string head = "group " + group.definition.name + ": ";
  if (!group.unavailable.empty()) return head + "NOT countable: " + group.unavailable;
  std::string events;
  for (const auto& name : group.counted) events += (events.empty() ? "" : ", ") + name;
  return head + "countable (" + events + ")";
}

// The groups' members as the collector exports them: the chosen event, under the member's
// metric; their HELP is the family's, shared by every group that counts the event.
std::vector<ExportedGroup> exported_groups(const std::vector<PlannedGroup>& groups) {
  std::vector<ExportedGroup> exported;
  for (const auto& planned : groups) {
    ExportedGroup group;
    group.name = planned.definition.name;
    for (std::size_t m = 0; m < planned.counted.size(); ++m) {
      const auto& member = planned.definition.members[m];
      PapiEventConfig chosen;
      chosen.event = planned.counted[m];
      events::EventSpec spec;
      spec.event = planned.counted[m];
      spec.counted_as = planned.counted[m];
      spec.where = planned.definition.where;
      spec.metric = member.metric;
      spec.unit = member.unit;
      spec.description =
          events::description_of(chosen, [](const std::string& name) { return "Event " + name; }) +
          ". Counted in event groups, each group by its own kernel counters (label group)";
      group.members.push_back(std::move(spec));
    }
    exported.push_back(std::move(group));
  }
  return exported;
}

std::vector<std::string> group_report_lines(const std::vector<PlannedGroup>& counted,
                                            const GroupProbe& probe) {
  std::vector<std::string> lines;
  const auto is_counted = [&](const std::string& name) {
    return std::any_of(counted.begin(), counted.end(),
                       [&](const PlannedGroup& group) { return group.definition.name == name; });
  };
  for (const auto& group : events::builtin_groups()) {
    lines.push_back(group_check_line(plan_group(group, probe)) +
                    (is_counted(group.name) ? "; counted" : ""));
  }
  for (const auto& group : counted) {
    if (!group.definition.builtin) lines.push_back(group_check_line(group) + "; counted");
  }
  return lines;
}

}  // namespace hwperf::papi
