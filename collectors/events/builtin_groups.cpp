// The built-in groups: each formula written once, with where it comes from; each member's events
// in order of preference (the first this machine can count is counted). docs/collectors/groups.md
// explains each one.
//
// Native event names are libpfm4's (4.13: the icx, spr, gnr, amd64_fam19h_zen3/zen4 and
// amd64_fam1ah_zen5 tables on x86-64, arm_n1, arm_n2, arm_v1 and arm_v2 on arm64, checked by
// encoding each with LIBPFM_FORCE_PMU, as tests/unit/test_papi_groups.cpp does), and where PAPI
// defines the matching preset on those CPUs they are the native event of its papi_events.csv
// (PAPI 7.0: "CPU,icx" and "CPU,skx" for Intel servers, "CPU,amd64_fam19h_zen3" for AMD, whose
// events Zen 4 keeps; PAPI 7.1 for Arm Neoverse, "CPU,arm_n1", "CPU,arm_n2", "CPU,arm_v1" and
// "CPU,arm_v2", sections Debian 12's PAPI 7.0 does not have). An event that no candidate's PMU has
// fails to encode and the next candidate is tried, so one list serves Intel, AMD and Arm. Names of
// the form pmu/event/ are the kernel's sysfs events (/sys/bus/event_source/devices/<pmu>/events),
// encoded from their sysfs description.
#include <string>
#include <vector>

#include "collectors/events/groups.h"

namespace hwperf::events {
namespace {

struct MemberRow {
  const char* variable;
  // nullptr: the name the vocabulary gives the first candidate it names (default_metric_base;
  // the kernel's generic event behind a vendor's own preferred to it, as in branch), the name
  // the event has wherever it is counted, alone or in any group. Given only for a member counted
  // by native or sysfs events the vocabulary does not name (each vendor's own), where the name
  // is the member's meaning, the same whichever candidate this machine counts.
  const char* metric;
  std::vector<const char*> candidates;
};
struct MetricRow {
  const char* name;
  const char* expr;
  const char* help;
};
struct GroupRow {
  const char* name;
  const char* meaning;
  const char* source;
  std::vector<MemberRow> members;
  std::vector<MetricRow> metrics;
};

const std::vector<GroupRow>& rows() {
  static const std::vector<GroupRow> table = {
      {"ipc",
       "instructions retired per CPU cycle",
       "perf stat's \"insn per cycle\" (tools/perf/util/stat-shadow.c); likwid's IPC line "
       "(groups/<arch>/*.txt: FIXC0 / FIXC1)",
       {{"ins", nullptr, {"perf::INSTRUCTIONS"}}, {"cyc", nullptr, {"perf::CYCLES"}}},
       {{"ipc", "ins / cyc", "Instructions retired per CPU cycle."}}},
      // Arm: the kernel's generic events count retired branches (BR_RETIRED, or PC_WRITE_RETIRED
      // on older kernels) against speculatively mispredicted ones (BR_MIS_PRED:
      // armv8_pmuv3_perf_map in drivers/perf/arm_pmuv3.c), so Neoverse counts both retired:
      // BR_RETIRED (PAPI_BR_INS of papi_events.csv 7.1, arm_n1 to arm_v2) and BR_MIS_PRED_RETIRED
      // (PAPI_BR_MSP of arm_v2; perf's branch_misprediction_ratio,
      // tools/perf/pmu-events/arch/arm64/arm/neoverse-n2-v2/ metrics.json). The members keep the
      // generic events' names.
      {"branch",
       "branches and the share of them mispredicted",
       "perf stat's \"of all branches\" (tools/perf/util/stat-shadow.c); likwid's BRANCH group; "
       "on Arm Neoverse perf's branch_misprediction_ratio (BR_MIS_PRED_RETIRED / BR_RETIRED)",
       {{"br", nullptr, {"BR_RETIRED", "perf::BRANCH-INSTRUCTIONS"}},
        {"miss", nullptr, {"BR_MIS_PRED_RETIRED", "perf::BRANCH-MISSES"}}},
       {{"branch_miss_ratio", "miss / br", "Share of branch instructions mispredicted."}}},
      // The kernel's generic cache events on arm64 are L1D_CACHE and L1D_CACHE_REFILL
      // (armv8_pmuv3_perf_map, drivers/perf/arm_pmuv3.c).
      {"cache",
       "cache references and the share of them that missed (the kernel's generic cache events: "
       "the last-level cache on Intel, L2 requests from the core on AMD Zen, the level 1 data "
       "cache on Arm)",
       "perf stat's \"of all cache refs\" (tools/perf/util/stat-shadow.c)",
       {{"ref", nullptr, {"perf::CACHE-REFERENCES"}}, {"miss", nullptr, {"perf::CACHE-MISSES"}}},
       {{"cache_miss_ratio", "miss / ref", "Share of cache references that missed."}}},
      // Intel: PAPI_L1_DCM is L1D:REPLACEMENT (icx, skx); PAPI defines no PAPI_L1_DCA there, and
      // MEM_INST_RETIRED:ANY (every retired load and store) is the access that can replace a
      // line, likwid's L1 data volume's loads plus stores. AMD: PAPI_L1_DCA and PAPI_L1_DCM of
      // amd64_fam19h_zen3; Zen 5's REQUESTS_TO_L2_GROUP1 has no CHANGE_TO_X (libpfm4's
      // amd64_fam1ah_zen5 table), hence its own candidate. Arm Neoverse: PAPI_L1_DCA and
      // PAPI_L1_DCM of papi_events.csv 7.1 (arm_n1, arm_n2, arm_v1, arm_v2), L1D_CACHE (loads and
      // stores) and L1D_CACHE_REFILL. Elsewhere the kernel's generic L1D read events (loads only).
      {"l1d",
       "level 1 data cache accesses and misses",
       "PAPI_L1_DCM and PAPI_L1_DCA (papi_events.csv); likwid's L1CACHE group",
       {{"access",
         "l1d_accesses",
         {"MEM_INST_RETIRED:ANY", "LS_DISPATCH:LD_ST_DISPATCH:STORE_DISPATCH:LD_DISPATCH",
          "L1D_CACHE", "perf::PERF_COUNT_HW_CACHE_L1D:READ:ACCESS"}},
        {"miss",
         "l1d_misses",
         {"L1D:REPLACEMENT", "REQUESTS_TO_L2_GROUP1:RD_BLK_L:RD_BLK_X:LS_RD_BLK_C_S:CHANGE_TO_X",
          "REQUESTS_TO_L2_GROUP1:RD_BLK_L:RD_BLK_X:LS_RD_BLK_C_S", "L1D_CACHE_REFILL",
          "perf::PERF_COUNT_HW_CACHE_L1D:READ:MISS"}}},
       {{"l1d_miss_ratio", "miss / access", "Share of level 1 data cache accesses that missed."},
        {"l1d_hit_ratio", "1 - miss / access", "Share of level 1 data cache accesses that hit."}}},
      // Intel: PAPI_L2_DCA is L2_RQSTS:ALL_DEMAND_REFERENCES (icx, skx); PAPI_L2_DCM is derived
      // there (LLC_REFERENCES - L2_RQSTS:CODE_RD_MISS, not one counter), so the misses are the
      // same demand requests' misses, L2_RQSTS:ALL_DEMAND_MISS. AMD: PAPI defines no
      // PAPI_L2_DCA; PAPI_L2_DCR (the L2's data requests, Zen 5 without CHANGE_TO_X as for l1d)
      // and PAPI_L2_DCM of amd64_fam19h_zen3. Arm Neoverse: the L2's accesses and refills,
      // PAPI_L2_TCA and PAPI_L2_DCM of papi_events.csv 7.1; libpfm4 4.13 names the access
      // L2D_CACHE_ACCESS on arm_n1, arm_n2 and arm_v1 and L2D_CACHE on arm_v2 (both event 0x16).
      // The kernel has no generic L2 event to fall back to.
      {"l2",
       "level 2 cache data requests and misses",
       "PAPI_L2_DCM and PAPI_L2_DCA (papi_events.csv); likwid's L2CACHE group",
       {{"access",
         "l2_accesses",
         {"L2_RQSTS:ALL_DEMAND_REFERENCES",
          "REQUESTS_TO_L2_GROUP1:RD_BLK_L:RD_BLK_X:LS_RD_BLK_C_S:CHANGE_TO_X",
          "REQUESTS_TO_L2_GROUP1:RD_BLK_L:RD_BLK_X:LS_RD_BLK_C_S", "L2D_CACHE_ACCESS",
          "L2D_CACHE"}},
        {"miss",
         "l2_misses",
         {"L2_RQSTS:ALL_DEMAND_MISS", "CORE_TO_L2_CACHEABLE_REQUEST_ACCESS_STATUS:LS_RD_BLK_C",
          "L2D_CACHE_REFILL"}}},
       {{"l2_miss_ratio", "miss / access", "Share of level 2 cache requests that missed."},
        {"l2_hit_ratio", "1 - miss / access", "Share of level 2 cache requests that hit."}}},
      {"freq",
       "CPU cycles against reference cycles and CPU time: the clock the CPU really ran at (the "
       "reference: the nominal clock on x86, the system counter's rate on Arm)",
       "perf stat's \"GHz\" (cycles / task-clock, tools/perf/util/stat-shadow.c); likwid's "
       "CLOCK group (cycles / reference cycles x nominal clock)",
       // The kernel maps REF-CYCLES on Intel only (arch/x86/events/intel/core.c; AMD's
       // amd_perfmon_event_map and arm64's armv8_pmuv3_perf_map have none): elsewhere the msr
       // PMU's MPERF, which also counts at the reference clock while not halted
       // (arch/x86/events/msr.c; turbostat's Bzy_MHz), and on Arm CNT_CYCLES, which counts at the
       // system counter's constant rate (PAPI_REF_CYC of papi_events.csv 7.1, arm_v2; libpfm4's
       // arm_n2, arm_v1 and arm_v2 tables have it, arm_n1's does not).
       {{"cyc", nullptr, {"perf::CYCLES"}},
        {"ref", nullptr, {"perf::REF-CYCLES", "msr/mperf/", "CNT_CYCLES"}},
        {"clock", nullptr, {"perf::TASK-CLOCK"}}},
       {{"frequency_ratio", "cyc / ref",
         "Average clock while not halted, as a multiple of the nominal (reference) clock."},
        {"ghz", "cyc / clock / 1e9",
         "Average clock while counted, in GHz (cycles per second of "
         "CPU time)."}}},
      {"topdown",
       "level 1 of Intel's top-down analysis: the share of pipeline slots retiring, lost to bad "
       "speculation, or bound by the front end or the back end (Ice Lake and later)",
       "Intel's top-down microarchitecture analysis method (Intel 64 and IA-32 Architectures "
       "Optimization Reference Manual, appendix B.1); the kernel's topdown-* events "
       "(arch/x86/events/intel/core.c), perf stat --topdown and the tma_* metrics of "
       "tools/perf/pmu-events/arch/x86/*/*metrics.json; likwid's TMA group",
       // Only in sysfs (EVENT_ATTR_STR(slots, ...) and topdown-* in arch/x86/events/intel/core.c);
       // the kernel counts the topdown-* metrics only in a group that slots leads.
       {{"slots", "topdown_slots", {"cpu/slots/"}},
        {"retiring", "topdown_retiring_slots", {"cpu/topdown-retiring/"}},
        {"bad_spec", "topdown_bad_spec_slots", {"cpu/topdown-bad-spec/"}},
        {"fe_bound", "topdown_fe_bound_slots", {"cpu/topdown-fe-bound/"}},
        {"be_bound", "topdown_be_bound_slots", {"cpu/topdown-be-bound/"}}},
       {{"topdown_retiring_ratio", "retiring / slots", "Share of pipeline slots retiring."},
        {"topdown_bad_speculation_ratio", "bad_spec / slots",
         "Share of pipeline slots lost to bad speculation."},
        {"topdown_frontend_bound_ratio", "fe_bound / slots",
         "Share of pipeline slots the front end left empty."},
        {"topdown_backend_bound_ratio", "be_bound / slots",
         "Share of pipeline slots stalled by the back end."}}},
      {"aperf_mperf",
       "actual against reference cycles while not halted, from the APERF and MPERF registers: "
       "the clock the CPU ran at, on Intel and AMD alike",
       "the kernel's msr PMU (arch/x86/events/msr.c: aperf, mperf); turbostat's Bzy_MHz "
       "(TSC_MHz x APERF / MPERF)",
       {{"aperf", "aperf_cycles", {"msr/aperf/"}}, {"mperf", "mperf_cycles", {"msr/mperf/"}}},
       {{"aperf_mperf_ratio", "aperf / mperf",
         "Average clock while not halted, as a multiple of the reference (MPERF) clock."}}},
      {"software",
       "the kernel's software events: CPU time, context switches, migrations, page faults "
       "(countable without a hardware PMU, in VMs too)",
       "perf stat's default software lines (\"CPUs utilized\", \"/sec\" per second of task-clock, "
       "tools/perf/util/stat-shadow.c)",
       {{"clock", nullptr, {"perf::TASK-CLOCK"}},
        {"cs", nullptr, {"perf::CONTEXT-SWITCHES"}},
        {"migrations", nullptr, {"perf::CPU-MIGRATIONS"}},
        {"faults", nullptr, {"perf::PAGE-FAULTS"}}},
       {{"cpus_utilized", "clock", "CPUs utilized: seconds of CPU time per second."},
        {"context_switches_per_cpu_second", "cs / clock",
         "Context switches per second of CPU time."},
        {"cpu_migrations_per_cpu_second", "migrations / clock",
         "CPU migrations per second of CPU time."},
        {"page_faults_per_cpu_second", "faults / clock", "Page faults per second of CPU time."}}},
  };
  return table;
}

// The vocabulary's name of the first candidate it names, else of the first candidate.
std::string named_metric(const std::vector<const char*>& candidates) {
  for (const char* candidate : candidates) {
    if (!builtin_description(candidate).empty()) return default_metric_base(candidate);
  }
  return default_metric_base(candidates.front());
}

}  // namespace

std::vector<GroupDefinition> builtin_groups() {
  std::vector<GroupDefinition> groups;
  for (const auto& row : rows()) {
    GroupDefinition group;
    group.name = row.name;
    group.builtin = true;
    group.meaning = row.meaning;
    group.source = row.source;
    for (const auto& member_row : row.members) {
      GroupMember member;
      member.variable = member_row.variable;
      member.metric =
          member_row.metric != nullptr ? member_row.metric : named_metric(member_row.candidates);
      for (const char* candidate : member_row.candidates) {
        EventSpec event;
        event.event = candidate;
        event.metric = member.metric;
        member.candidates.push_back(std::move(event));
      }
      member.unit = event_unit(member.candidates.front().event);
      group.members.push_back(std::move(member));
    }
    for (const auto& metric_row : row.metrics) {
      group.metrics.push_back({metric_row.name, Formula::parse(metric_row.expr), metric_row.help});
    }
    groups.push_back(std::move(group));
  }
  return groups;
}

std::vector<std::string> builtin_group_names() {
  std::vector<std::string> names;
  for (const auto& row : rows()) names.emplace_back(row.name);
  return names;
}

}  // namespace hwperf::events
