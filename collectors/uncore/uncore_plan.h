// What the uncore collector will count on this machine, found in sysfs alone (no counter opened):
// the kernel's own perf PMUs under <sysfs>/bus/event_source/devices, one counter per PMU box per
// CPU its cpumask names (one CPU per package for uncore PMUs), or per CPU for the `msr` PMU,
// which has no cpumask. --check-config prints this plan; the collector opens it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "collectors/perf/perf_event.h"
#include "topology/topology.h"

namespace hwperf::uncore {

// What one counter measures; each is one family. memory_total is the traffic of memory
// controllers that count reads and writes together (Arm CMN, DMC-620), where the read and write
// families have no counter.
enum class Quantity {
  memory_read,
  memory_write,
  memory_total,
  aperf,
  mperf,
  tsc,
  cstate_core,
  cstate_package
};
inline constexpr std::size_t kQuantityCount = 8;

// The availability gauge's `source` label for each quantity ("memory_read", "msr_aperf", ...).
const char* source_name(Quantity quantity);

struct PlannedCounter {
  Quantity quantity = Quantity::tsc;
  perf::EventEncoding encoding;  // name: "uncore_imc_3/cas_count_read/"
  unsigned cpu = 0;
  unsigned package = 0;
  // Memory counters: bytes per count, an exact integer (64 for one CAS of a 64-byte line), from
  // the kernel's .scale and .unit, or where the kernel gives none, from the source cited in
  // uncore_plan.cpp. Cycle counters: 1.
  std::uint64_t bytes_per_count = 1;
  // C-state residency counters: the state ("c6" of c6-residency) and, per core, the core id.
  std::string state;
  unsigned core = 0;
};

// Why a quantity is or is not counted here: the availability gauge's `reason` label.
inline constexpr const char* kReasonOk = "ok";
inline constexpr const char* kReasonAbsent = "absent";  // no such PMU or event in sysfs
inline constexpr const char* kReasonPermission = "permission_denied";
inline constexpr const char* kReasonOpenFailed = "open_failed";
inline constexpr const char* kReasonUnusable =
    "unusable";  // a file the kernel wrote we cannot read

struct SourceState {
  Quantity quantity = Quantity::tsc;
  std::string pmu;  // "uncore_imc", "amd_umc", "arm_cmn", "msr"; "" when none was found
  std::string reason = kReasonOk;
  std::string detail;  // for the log and --check-config: path, event, remedy
  // Absent only because the PMU family found counts this traffic under another memory source
  // (reads and writes apart where memory_total is asked, or together): logged as information.
  bool counted_otherwise = false;
};

struct UncorePlan {
  std::vector<PlannedCounter> counters;
  std::vector<SourceState> sources;  // one per Quantity, in enum order
};

// Reads <sysfs_root>/bus/event_source/devices. C-state residency comes from `cstate_core` (one
// CPU per core in its cpumask) and `cstate_pkg` (one per package), every *-residency event they
// list. Memory bandwidth comes from the first PMU family
// found of: Intel server IMC boxes `uncore_imc_<N>` (events cas_count_read/cas_count_write),
// Intel client `uncore_imc` (data_reads/data_writes), AMD Zen 4+ `amd_umc_<N>`, Intel client
// `uncore_imc_free_running_<N>` (data_read/data_write; on servers it counts what
// uncore_imc_<N> counts, so it is used only when nothing before it is there), NVIDIA Grace's
// `nvidia_scf_pmu_<N>` (cmem_rd_data, cmem_wr_total_bytes), Arm CMN meshes `arm_cmn_<N>`
// (hnf_mc_reqs: reads and writes together), Arm DMC-620 memory controllers `arm_dmc620_<hex>`
// (clkdiv2_rdwr, together; their cpumask names no package, so only on a machine of one). Each
// box is counted on the CPU its cpumask names, in that CPU's package as the topology says
// (package ids need not be dense: a two-socket Grace has 36 and 2364). Never throws for what
// the machine lacks: that is a SourceState.
UncorePlan plan_uncore(const std::string& sysfs_root, const Topology& topology);

// Bytes per count from an event's .scale and .unit texts ("6.103515625e-5", "MiB" -> 64); nothing
// unless their product is a whole number of bytes (so that totals stay exact in integers).
std::optional<std::uint64_t> bytes_per_count(std::string_view scale, std::string_view unit);

// --check-config lines: per quantity, the PMU and events found and the CPU each package is
// counted on, or why not.
std::vector<std::string> describe_plan(const UncorePlan& plan);

}  // namespace hwperf::uncore
