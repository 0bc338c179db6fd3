#include "collectors/uncore/uncore_plan.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>

#include "collectors/perf/pmu_sysfs.h"
#include "common/cpu_list.h"
#include "common/files.h"
#include "common/text.h"

namespace hwperf::uncore {
namespace {
namespace fs = std::filesystem;

// A family of PMU boxes that count memory traffic, and how its two events are named.
struct MemoryFamily {
  const char* prefix;  // the PMU name, or its stem before "_<N>"
  bool numbered;       // boxes are <prefix>_<N>; else exactly <prefix>
  const char* read_event;
  const char* write_event;
  // Where the kernel describes no event in sysfs (AMD UMC), the description perf's own event
  // tables give, written in the PMU's format terms, and the bytes one count stands for.
  const char* read_builtin;
  const char* write_builtin;
  std::uint64_t builtin_bytes;
};

constexpr MemoryFamily kMemoryFamilies[] = {
    // Intel server IMC boxes (arch/x86/events/intel/uncore_snbep.c: spr_uncore_imc_events and
    // its predecessors name cas_count_read/cas_count_write with .scale and .unit).
    {"uncore_imc", true, "cas_count_read", "cas_count_write", nullptr, nullptr, 0},
    // Intel client IMC, one box (arch/x86/events/intel/uncore_snb.c: data_reads/data_writes,
    // also with .scale and .unit).
    {"uncore_imc", false, "data_reads", "data_writes", nullptr, nullptr, 0},
    // AMD Zen 4+ UMC, one PMU per memory controller (arch/x86/events/amd/uncore.c,
    // amd_uncore_umc_ctx_init names them amd_umc_<index>; format event:config:0-7 and
    // rdwrmask:config:8-9, no events/ directory). The events are perf's
    // (tools/perf/pmu-events/arch/x86/amdzen4/memory-controller.json: umc_cas_cmd.rd/.wr are
    // EventCode 0x0a with RdWrMask 0x1/0x2); one CAS moves one 64-byte line.
    {"amd_umc", true, nullptr, nullptr, "event=0x0a,rdwrmask=0x1", "event=0x0a,rdwrmask=0x2", 64},
    // Intel client parts from Tiger Lake on have only free-running IMC counters
    // (arch/x86/events/intel/uncore_snb.c, tgl_uncore_imc_events: data_read/data_write with
    // .scale and .unit). Last, because on servers they count what uncore_imc_<N> counts.
    {"uncore_imc_free_running", true, "data_read", "data_write", nullptr, nullptr, 0},
};

std::string devices_dir(const std::string& sysfs_root) {
  return sysfs_root + "/bus/event_source/devices";
}

bool is_box_of(const std::string& name, const MemoryFamily& family) {
  const std::string prefix = family.prefix;
  if (!family.numbered) return name == prefix;
  if (name.size() <= prefix.size() + 1 || name.compare(0, prefix.size(), prefix) != 0 ||
      name[prefix.size()] != '_') {
    return false;
  }
  return std::all_of(name.begin() + static_cast<std::ptrdiff_t>(prefix.size() + 1), name.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
}

// Boxes sorted by their number, so that plans and reports read in the kernel's order.
std::vector<std::string> boxes_of(const std::string& devices, const MemoryFamily& family) {
  std::vector<std::string> boxes;
  std::error_code ec;
  for (fs::directory_iterator it(devices, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (is_box_of(name, family)) boxes.push_back(name);
  }
  std::sort(boxes.begin(), boxes.end(), [](const std::string& a, const std::string& b) {
    return a.size() != b.size() ? a.size() < b.size() : a < b;
  });
  return boxes;
}

// One event of one box, encoded from the box's format files; the reason it cannot be otherwise.
struct EncodedEvent {
  perf::EventEncoding encoding;
  std::uint64_t bytes_per_count = 1;
  std::string problem;
};

EncodedEvent encode(const std::string& box_dir, const std::string& box, const char* event,
                    const char* builtin, std::uint64_t builtin_bytes, bool memory) {
  EncodedEvent out;
  const auto type = read_u64_file(box_dir + "/type");
  if (!type.ok() || type.value > 0xFFFFFFFFu) {
    out.problem = box_dir + "/type: " + (type.ok() ? "not a PMU type" : errno_text(type.error));
    return out;
  }
  std::string description = builtin != nullptr ? builtin : "";
  const std::string event_path = box_dir + "/events/" + (event != nullptr ? event : "");
  if (event != nullptr) {
    const auto text = read_small_file(event_path);
    if (!text.ok()) {
      out.problem = event_path + ": " + errno_text(text.error);
      return out;
    }
    description = std::string(trim(text.value));
  }
  const std::string name = box + "/" + (event != nullptr ? event : description) + "/";
  try {
    const auto config = perf::parse_perf_event(description, perf::read_formats(box_dir));
    out.encoding.name = name;
    out.encoding.type = static_cast<std::uint32_t>(type.value);
    out.encoding.config = config.config;
    out.encoding.config1 = config.config1;
    out.encoding.config2 = config.config2;
  } catch (const std::invalid_argument& e) {
    out.problem = name + ": " + e.what();
    return out;
  }
  if (!memory) return out;
  if (event == nullptr) {
    out.bytes_per_count = builtin_bytes;
    return out;
  }
  const auto scale = read_small_file(event_path + ".scale");
  const auto unit = read_small_file(event_path + ".unit");
  const auto bytes =
      scale.ok() && unit.ok() ? bytes_per_count(scale.value, unit.value) : std::nullopt;
  if (!bytes) {
    out.problem = event_path + ".scale and .unit do not give a whole number of bytes per count";
    return out;
  }
  out.bytes_per_count = *bytes;
  return out;
}

// The CPUs a box's cpumask names, each with its package; a problem when it names none we know.
std::vector<const HardwareThread*> cpumask_threads(const std::string& box_dir,
                                                   const Topology& topology, std::string& problem) {
  std::vector<const HardwareThread*> threads;
  const auto mask = read_small_file(box_dir + "/cpumask");
  if (!mask.ok()) {
    problem = box_dir + "/cpumask: " + errno_text(mask.error);
    return threads;
  }
  try {
    for (unsigned cpu : parse_cpu_list(trim(mask.value))) {
      if (const HardwareThread* thread = topology.find(cpu)) threads.push_back(thread);
    }
  } catch (const std::invalid_argument& e) {
    problem = box_dir + "/cpumask: " + e.what();
    return threads;
  }
  if (threads.empty()) problem = box_dir + "/cpumask names no CPU of the topology";
  return threads;
}

// Adds the memory counters of the first family present; sets both memory sources.
void plan_memory(const std::string& devices, const Topology& topology, UncorePlan& plan) {
  SourceState& read = plan.sources[static_cast<std::size_t>(Quantity::memory_read)];
  SourceState& write = plan.sources[static_cast<std::size_t>(Quantity::memory_write)];
  for (const MemoryFamily& family : kMemoryFamilies) {
    const auto boxes = boxes_of(devices, family);
    if (boxes.empty()) continue;
    // A client uncore_imc without data_reads is not this family; try the next.
    if (family.read_event != nullptr &&
        !fs::exists(devices + "/" + boxes.front() + "/events/" + family.read_event)) {
      continue;
    }
    std::vector<PlannedCounter> counters;
    std::string problem;
    for (const std::string& box : boxes) {
      const std::string box_dir = devices + "/" + box;
      const auto threads = cpumask_threads(box_dir, topology, problem);
      for (Quantity quantity : {Quantity::memory_read, Quantity::memory_write}) {
        const bool is_read = quantity == Quantity::memory_read;
        const auto event = encode(box_dir, box, is_read ? family.read_event : family.write_event,
                                  is_read ? family.read_builtin : family.write_builtin,
                                  family.builtin_bytes, true);
        if (!event.problem.empty()) problem = event.problem;
        if (!problem.empty()) break;
        for (const HardwareThread* thread : threads) {
          counters.push_back({quantity, event.encoding, thread->cpu, thread->package,
                              event.bytes_per_count, "", 0});
        }
      }
      if (!problem.empty()) break;
    }
    read.pmu = write.pmu = family.prefix;
    if (!problem.empty()) {
      read.reason = write.reason = kReasonUnusable;
      read.detail = write.detail = problem;
      return;
    }
    read.detail = write.detail = std::to_string(boxes.size()) + " box(es)";
    plan.counters.insert(plan.counters.end(), counters.begin(), counters.end());
    return;
  }
  read.reason = write.reason = kReasonAbsent;
  read.detail = write.detail =
      "no memory controller PMU (uncore_imc_<N>, uncore_imc, amd_umc_<N>, "
      "uncore_imc_free_running_<N>) under " +
      devices + ": a VM, a CPU the kernel has no uncore driver for, or a kernel older than the CPU";
}

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
    const auto event = encode(dir, "msr", name, nullptr, 0, false);
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
    const auto event = encode(dir, pmu, name.c_str(), nullptr, 0, false);
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
       {Quantity::memory_read, Quantity::memory_write, Quantity::aperf, Quantity::mperf,
        Quantity::tsc, Quantity::cstate_core, Quantity::cstate_package}) {
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
