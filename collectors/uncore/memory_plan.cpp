#include "collectors/uncore/memory_plan.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <vector>

#include "collectors/uncore/pmu_boxes.h"
#include "common/files.h"
#include "common/text.h"

namespace hwperf::uncore {
namespace {
namespace fs = std::filesystem;

// How the boxes of a family are named: exactly the prefix, or "<prefix>_<number>".
enum class Suffix { none, decimal, hex };

// One event of a memory family: the quantity it counts, its sysfs event (events/<event>) or,
// where the kernel describes none (AMD UMC), the description perf's own event tables give in
// the PMU's format terms, and the bytes one count stands for (0: the event's .scale x .unit).
struct MemoryEvent {
  Quantity quantity;
  const char* event;
  const char* builtin;
  std::uint64_t bytes;
};

// A family of PMU boxes that count memory traffic.
struct MemoryFamily {
  const char* prefix;
  Suffix suffix;
  std::vector<MemoryEvent> events;
  // A box without the family's first event is no memory box of this family and is left out
  // (else: the family is not this machine's, the next one is tried).
  bool skip_boxes_without_event = false;
  // Its cpumask names no package (the CPU that takes its interrupt): counted only on a machine
  // of one package, where every box is that package's.
  bool single_package_only = false;
};

// A memory family's events: reads, writes, or both together; `bytes` 0 for .scale x .unit.
MemoryEvent reads(const char* event, std::uint64_t bytes = 0, const char* builtin = nullptr) {
  return {Quantity::memory_read, event, builtin, bytes};
}
MemoryEvent writes(const char* event, std::uint64_t bytes = 0, const char* builtin = nullptr) {
  return {Quantity::memory_write, event, builtin, bytes};
}
MemoryEvent reads_and_writes(const char* event, std::uint64_t bytes) {
  return {Quantity::memory_total, event, nullptr, bytes};
}

const std::vector<MemoryFamily>& memory_families() {
  static const std::vector<MemoryFamily> families = {
      // Intel server IMC boxes (arch/x86/events/intel/uncore_snbep.c: spr_uncore_imc_events and
      // its predecessors name cas_count_read/cas_count_write with .scale and .unit).
      {"uncore_imc", Suffix::decimal, {reads("cas_count_read"), writes("cas_count_write")}},
      // Intel client IMC, one box (arch/x86/events/intel/uncore_snb.c: data_reads/data_writes,
      // also with .scale and .unit).
      {"uncore_imc", Suffix::none, {reads("data_reads"), writes("data_writes")}},
      // AMD Zen 4+ UMC, one PMU per memory controller (arch/x86/events/amd/uncore.c,
      // amd_uncore_umc_ctx_init names them amd_umc_<index>; format event:config:0-7 and
      // rdwrmask:config:8-9, no events/ directory). The events are perf's
      // (tools/perf/pmu-events/arch/x86/amdzen4/memory-controller.json: umc_cas_cmd.rd/.wr are
      // EventCode 0x0a with RdWrMask 0x1/0x2); one CAS moves one 64-byte line.
      {"amd_umc",
       Suffix::decimal,
       {reads(nullptr, 64, "event=0x0a,rdwrmask=0x1"),
        writes(nullptr, 64, "event=0x0a,rdwrmask=0x2")}},
      // Intel client parts from Tiger Lake on have only free-running IMC counters
      // (arch/x86/events/intel/uncore_snb.c, tgl_uncore_imc_events: data_read/data_write with
      // .scale and .unit). After the above, because on servers they count what uncore_imc_<N>
      // counts.
      {"uncore_imc_free_running", Suffix::decimal, {reads("data_read"), writes("data_write")}},
      // NVIDIA Grace: one SCF PMU per socket, nvidia_scf_pmu_<NUMA node of its CPUs>
      // (drivers/perf/arm_cspmu/nvidia_cspmu.c: nv_cspmu_match, nv_cspmu_format_name), whose
      // cpumask names one CPU of the socket (arm_cspmu.c). scf_pmu_event_attrs gives
      // cmem_rd_data (0x1a5) and cmem_wr_total_bytes (0x1db) without .scale; a read counts one
      // 32-byte beat and the write event counts bytes (likwid's groups/nvidia_grace/MEM.txt,
      // RRZE-HPC/likwid#585: "The transfer unit 'beats' is 32 Bytes").
      {"nvidia_scf_pmu",
       Suffix::decimal,
       {reads("cmem_rd_data", 32), writes("cmem_wr_total_bytes", 1)}},
      // Arm CMN meshes (Ampere Altra, AWS Graviton 2), arm_cmn_<N> (drivers/perf/arm-cmn.c,
      // arm_cmn_probe), one per socket, its cpumask a CPU of the mesh's NUMA node
      // (cpumask_local_spread(0, dev_to_node())). hnf_mc_reqs (type 0x5, eventid 0xd) counts,
      // over every HN-F of the mesh, the requests to the memory controllers: reads and
      // write-backs together, one 64-byte line each. A mesh without HN-F hides the event
      // (arm_cmn_event_attr_is_visible).
      {"arm_cmn", Suffix::decimal, {reads_and_writes("hnf_mc_reqs", 64)}, true},
      // Arm DMC-620 memory controllers (Ampere Altra), one PMU per channel named after its
      // physical address, arm_dmc620_<hex> (drivers/perf/arm_dmc620_pmu.c,
      // dmc620_pmu_device_probe). clkdiv2_rdwr (event 0x12, clkdiv2 1) counts the channel's
      // read and write commands together, one 64-byte burst each. Its cpumask, where the kernel
      // has one, is the CPU that took its interrupt (__dmc620_pmu_get_irq: raw_smp_processor_id),
      // no package of its own.
      {"arm_dmc620", Suffix::hex, {reads_and_writes("clkdiv2_rdwr", 64)}, false, true},
  };
  return families;
}

bool is_box_of(const std::string& name, const MemoryFamily& family) {
  const std::string prefix = family.prefix;
  if (family.suffix == Suffix::none) return name == prefix;
  if (name.size() <= prefix.size() + 1 || name.compare(0, prefix.size(), prefix) != 0 ||
      name[prefix.size()] != '_') {
    return false;
  }
  const bool hex = family.suffix == Suffix::hex;
  return std::all_of(
      name.begin() + static_cast<std::ptrdiff_t>(prefix.size() + 1), name.end(),
      [hex](char c) { return (c >= '0' && c <= '9') || (hex && c >= 'a' && c <= 'f'); });
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

// Bytes per count of a memory event: the family's, else its .scale x .unit; 0 and `problem` set
// when those do not give a whole number of bytes.
std::uint64_t memory_bytes(const std::string& box_dir, const MemoryEvent& event,
                           std::string& problem) {
  if (event.bytes != 0) return event.bytes;
  const std::string event_path = box_dir + "/events/" + event.event;
  const auto scale = read_small_file(event_path + ".scale");
  const auto unit = read_small_file(event_path + ".unit");
  const auto bytes =
      scale.ok() && unit.ok() ? bytes_per_count(scale.value, unit.value) : std::nullopt;
  if (!bytes) {
    problem = event_path + ".scale and .unit do not give a whole number of bytes per count";
    return 0;
  }
  return *bytes;
}

// Where a box of `family` is counted: its cpumask's CPUs, or for a family whose cpumask names no
// package, the one package's first CPU (the kernel moves the event to the CPU it chose anyway).
std::vector<const HardwareThread*> box_threads(const std::string& box_dir,
                                               const MemoryFamily& family, const Topology& topology,
                                               std::string& problem) {
  if (!family.single_package_only) return cpumask_threads(box_dir, topology, problem);
  const auto packages = topology.packages();
  if (packages.size() != 1) {
    problem = std::string(family.prefix) +
              " PMUs name no package (their cpumask, where the kernel writes one, is the CPU "
              "taking their interrupt) and this machine has " +
              std::to_string(packages.size()) +
              " packages: which package a memory channel serves cannot be told from sysfs";
    return {};
  }
  return {topology.find(topology.cpus_of_package(packages.front()).front())};
}

// The counters of every box of `family`, or the problem that makes the family unusable.
std::vector<PlannedCounter> memory_counters(const std::string& devices,
                                            const std::vector<std::string>& boxes,
                                            const MemoryFamily& family, const Topology& topology,
                                            std::string& problem) {
  std::vector<PlannedCounter> counters;
  for (const std::string& box : boxes) {
    const std::string box_dir = devices + "/" + box;
    const auto threads = box_threads(box_dir, family, topology, problem);
    for (const MemoryEvent& memory : family.events) {
      if (!problem.empty()) return {};
      const auto event = encode_box_event(box_dir, box, memory.event, memory.builtin);
      problem = event.problem;
      const std::uint64_t bytes = problem.empty() ? memory_bytes(box_dir, memory, problem) : 0;
      for (const HardwareThread* thread : threads) {
        counters.push_back(
            {memory.quantity, event.encoding, thread->cpu, thread->package, bytes, "", 0});
      }
    }
    if (!problem.empty()) return {};
  }
  return counters;
}

// The boxes of `family` this machine has, or none when the family is not this machine's.
std::vector<std::string> family_boxes(const std::string& devices, const MemoryFamily& family) {
  auto boxes = boxes_of(devices, family);
  const char* first = family.events.front().event;
  if (first == nullptr) return boxes;
  const auto has_event = [&](const std::string& box) {
    return fs::exists(devices + "/" + box + "/events/" + first);
  };
  if (family.skip_boxes_without_event) {
    boxes.erase(std::remove_if(boxes.begin(), boxes.end(),
                               [&](const std::string& box) { return !has_event(box); }),
                boxes.end());
  } else if (!boxes.empty() && !has_event(boxes.front())) {
    boxes.clear();  // a client uncore_imc without data_reads is not this family
  }
  return boxes;
}

}  // namespace

void plan_memory(const std::string& devices, const Topology& topology, UncorePlan& plan) {
  const Quantity memory[] = {Quantity::memory_read, Quantity::memory_write, Quantity::memory_total};
  for (const MemoryFamily& family : memory_families()) {
    const auto boxes = family_boxes(devices, family);
    if (boxes.empty()) continue;
    std::string problem;
    auto counters = memory_counters(devices, boxes, family, topology, problem);
    std::string counted;  // its events, for the other quantities' detail
    for (const MemoryEvent& event : family.events) {
      counted += (counted.empty() ? "" : ", ") +
                 std::string(event.event != nullptr ? event.event : event.builtin);
    }
    for (Quantity quantity : memory) {
      SourceState& state = plan.sources[static_cast<std::size_t>(quantity)];
      state.pmu = family.prefix;
      const bool mine =
          std::any_of(family.events.begin(), family.events.end(),
                      [quantity](const MemoryEvent& event) { return event.quantity == quantity; });
      if (!mine) {
        state.reason = kReasonAbsent;
        state.counted_otherwise = true;
        state.detail = std::string(family.prefix) + " counts " + counted + ": " +
                       (quantity == Quantity::memory_total ? "reads and writes apart"
                                                           : "reads and writes together");
      } else if (!problem.empty()) {
        state.reason = kReasonUnusable;
        state.detail = problem;
      } else {
        state.detail = std::to_string(boxes.size()) + " box(es)";
      }
    }
    plan.counters.insert(plan.counters.end(), counters.begin(), counters.end());
    return;
  }
  for (Quantity quantity : memory) {
    SourceState& state = plan.sources[static_cast<std::size_t>(quantity)];
    state.reason = kReasonAbsent;
    state.detail =
        "no memory controller PMU (uncore_imc_<N>, uncore_imc, amd_umc_<N>, "
        "uncore_imc_free_running_<N>, nvidia_scf_pmu_<N>, arm_cmn_<N>, arm_dmc620_<hex>) under " +
        devices +
        ": a VM, a CPU the kernel has no uncore driver for, or a kernel older than the CPU";
  }
}

}  // namespace hwperf::uncore
