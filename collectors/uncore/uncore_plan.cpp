#include "collectors/uncore/uncore_plan.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>

#include "collectors/perf/pmu_sysfs.h"
#include "collectors/uncore/memory_plan.h"
#include "collectors/uncore/pmu_boxes.h"
#include "common/cpu_list.h"
#include "common/files.h"
#include "common/text.h"

namespace hwperf::uncore {
namespace {
namespace fs = std::filesystem;

// The msr PMU (arch/x86/events/msr.c) counts per CPU and has no cpumask: one counter per CPU.
void plan_msr(const std::string& devices, const Topology& topology, UncorePlan& plan) {
  const std::string dir = devices + "/msr";
  const std::pair<Quantity, const char*> events[] = {
      {Quantity::aperf, "aperf"}, {Quantity::mperf, "mperf"}, {Quantity::tsc, "tsc"}};
  const bool present = fs::exists(dir + "/type");
  for (const auto& [quantity, name] : events) {
    SourceState& state = plan.sources[static_cast<std::size_t>(quantity)];
    state.pmu = "msr";
    if (!present || !fs::exists(dir + "/events/" + name)) {
      state.reason = kReasonAbsent;
      state.detail = dir + (present ? "/events/" + std::string(name) : "/type") +
                     (present ? " is missing: this CPU (or the hypervisor) does not offer it"
                              : " is missing: the kernel has no msr PMU (CONFIG_PERF_EVENTS_MSR)");
      continue;
    }
    const auto event = encode_box_event(dir, "msr", name, nullptr);
    if (!event.problem.empty()) {
      state.reason = kReasonUnusable;
      state.detail = event.problem;
      continue;
    }
    for (const HardwareThread& thread : topology.threads()) {
      plan.counters.push_back({quantity, event.encoding, thread.cpu, thread.package, 1, "", 0});
    }
    state.detail = "every CPU";
  }
}

// The cstate PMUs (arch/x86/events/intel/cstate.c; AMD has none): every events/<state>-residency,
// format event:config:0-63, opened on each CPU the cpumask names (per core or per package).
void plan_cstate(const std::string& devices, const Topology& topology, Quantity quantity,
                 const char* pmu, UncorePlan& plan) {
  SourceState& state = plan.sources[static_cast<std::size_t>(quantity)];
  state.pmu = pmu;
  const std::string dir = devices + "/" + pmu;
  if (!fs::exists(dir + "/type")) {
    state.reason = kReasonAbsent;
    state.detail = dir +
                   "/type is missing: no C-state residency counters (AMD, a VM, or a CPU "
                   "intel_cstate does not know)";
    return;
  }
  std::vector<std::string> events;
  std::error_code ec;
  for (fs::directory_iterator it(dir + "/events", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (ends_with(name, "-residency")) events.push_back(name);
  }
  std::sort(events.begin(), events.end());
  std::string problem;
  const auto threads = cpumask_threads(dir, topology, problem);
  if (events.empty() && problem.empty()) problem = dir + "/events lists no *-residency event";
  std::vector<PlannedCounter> counters;
  for (const std::string& name : events) {
    if (!problem.empty()) break;
    const auto event = encode_box_event(dir, pmu, name.c_str(), nullptr);
    problem = event.problem;
    for (const HardwareThread* thread : threads) {
      const std::string state_name = name.substr(0, name.size() - std::string("-residency").size());
      counters.push_back(
          {quantity, event.encoding, thread->cpu, thread->package, 1, state_name, thread->core});
    }
  }
  if (!problem.empty()) {
    state.reason = kReasonUnusable;
    state.detail = problem;
    return;
  }
  state.detail = std::to_string(threads.size()) + " CPU(s)";
  plan.counters.insert(plan.counters.end(), counters.begin(), counters.end());
}

}  // namespace

const char* source_name(Quantity quantity) {
  switch (quantity) {
    case Quantity::memory_read: return "memory_read";
    case Quantity::memory_write: return "memory_write";
    case Quantity::memory_total: return "memory_total";
    case Quantity::aperf: return "msr_aperf";
    case Quantity::mperf: return "msr_mperf";
    case Quantity::tsc: return "msr_tsc";
    case Quantity::cstate_core: return "cstate_core";
    case Quantity::cstate_package: return "cstate_pkg";
  }
  return "unknown";
}

std::optional<std::uint64_t> bytes_per_count(std::string_view scale_text, std::string_view unit) {
  // The units the kernel's uncore drivers write in .unit files.
  static const std::map<std::string, double, std::less<>> kUnitBytes = {
      {"B", 1.0}, {"Bytes", 1.0}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}};
  const auto found = kUnitBytes.find(trim(unit));
  if (found == kUnitBytes.end()) return std::nullopt;
  const auto scale = perf::parse_event_scale(scale_text);
  if (!scale) return std::nullopt;
  const double bytes = *scale * found->second;
  const double rounded = std::round(bytes);
  if (rounded < 1 || rounded > 1048576.0 || std::fabs(bytes - rounded) > 1e-9 * rounded) {
    return std::nullopt;
  }
  return static_cast<std::uint64_t>(rounded);
}

UncorePlan plan_uncore(const std::string& sysfs_root, const Topology& topology) {
  UncorePlan plan;
  for (Quantity quantity :
       {Quantity::memory_read, Quantity::memory_write, Quantity::memory_total, Quantity::aperf,
        Quantity::mperf, Quantity::tsc, Quantity::cstate_core, Quantity::cstate_package}) {
    plan.sources.push_back({quantity, "", kReasonOk, ""});
  }
  const std::string devices = devices_dir(sysfs_root);
  plan_memory(devices, topology, plan);
  plan_msr(devices, topology, plan);
  plan_cstate(devices, topology, Quantity::cstate_core, "cstate_core", plan);
  plan_cstate(devices, topology, Quantity::cstate_package, "cstate_pkg", plan);
  return plan;
}

std::vector<std::string> describe_plan(const UncorePlan& plan) {
  std::vector<std::string> lines;
  for (const SourceState& state : plan.sources) {
    std::string line = std::string(source_name(state.quantity)) + ": ";
    if (state.reason != kReasonOk) {
      lines.push_back(line + "not counted (" + state.reason + "): " + state.detail);
      continue;
    }
    // Per package: the events and the CPUs they are opened on.
    std::map<unsigned, std::vector<unsigned>> cpus;
    std::vector<std::string> events;
    for (const PlannedCounter& counter : plan.counters) {
      if (counter.quantity != state.quantity) continue;
      auto& list = cpus[counter.package];
      if (std::find(list.begin(), list.end(), counter.cpu) == list.end()) {
        list.push_back(counter.cpu);
      }
      if (std::find(events.begin(), events.end(), counter.encoding.name) == events.end()) {
        events.push_back(counter.encoding.name);
      }
    }
    if (events.empty()) {
      lines.push_back(line + state.pmu + ": no CPU to count on");
      continue;
    }
    line += state.pmu + ", " + state.detail + ", " + std::to_string(events.size()) + " event(s) (" +
            events.front() + (events.size() > 1 ? " ..." : "") + ")";
    for (const auto& [package, list] : cpus) {
      line += "; package " + std::to_string(package) + " on cpu " + format_cpu_list(list);
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

}  // namespace hwperf::uncore
