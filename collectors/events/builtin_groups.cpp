// The built-in groups: each formula written once, with where it comes from; each member's events
// in order of preference (the first this machine can count is counted). docs/collectors/groups.md
// explains each one.
#include <string>
#include <vector>

#include "collectors/events/groups.h"

namespace hwperf::events {
namespace {

struct MemberRow {
  const char* variable;
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
       "perf stat's \"insn per cycle\" (tools/perf/util/stat-shadow.c); likwid's CPI",
       {{"ins", "instructions", {"perf::INSTRUCTIONS"}}, {"cyc", "cycles", {"perf::CYCLES"}}},
       {{"ipc", "ins / cyc", "Instructions retired per CPU cycle."}}},
      {"branch",
       "branches and the share of them mispredicted",
       "perf stat's \"of all branches\" (tools/perf/util/stat-shadow.c); likwid's BRANCH group",
       {{"br", "branch_instructions", {"perf::BRANCH-INSTRUCTIONS"}},
        {"miss", "branch_misses", {"perf::BRANCH-MISSES"}}},
       {{"branch_miss_ratio", "miss / br", "Share of branch instructions mispredicted."}}},
      {"cache",
       "cache references and the share of them that missed (the kernel's generic cache events: "
       "the last-level cache on Intel, L2 requests from the core on AMD Zen)",
       "perf stat's \"of all cache refs\" (tools/perf/util/stat-shadow.c)",
       {{"ref", "cache_references", {"perf::CACHE-REFERENCES"}},
        {"miss", "cache_misses", {"perf::CACHE-MISSES"}}},
       {{"cache_miss_ratio", "miss / ref", "Share of cache references that missed."}}},
      {"l1d",
       "level 1 data cache accesses and misses",
       "PAPI_L1_DCM and PAPI_L1_DCA (papi_events.csv); likwid's L1CACHE group",
       {{"access",
         "l1d_accesses",
         {"MEM_INST_RETIRED:ALL_LOADS", "LS_DISPATCH:LD_DISPATCH",
          "perf::PERF_COUNT_HW_CACHE_L1D:READ:ACCESS"}},
        {"miss",
         "l1d_misses",
         {"L1D:REPLACEMENT", "L1_DATA_CACHE_FILLS_ALL",
          "perf::PERF_COUNT_HW_CACHE_L1D:READ:MISS"}}},
       {{"l1d_miss_ratio", "miss / access", "Share of level 1 data cache accesses that missed."},
        {"l1d_hit_ratio", "1 - miss / access", "Share of level 1 data cache accesses that hit."}}},
      {"l2",
       "level 2 cache requests and misses",
       "PAPI_L2_DCM and PAPI_L2_DCA (papi_events.csv); likwid's L2CACHE group",
       {{"access", "l2_accesses", {"L2_RQSTS:REFERENCES", "L2_REQUEST_G1:ALL_NO_PREFETCH"}},
        {"miss", "l2_misses", {"L2_RQSTS:MISS", "L2_CACHE_REQ_STAT:LS_RD_BLK_C"}}},
       {{"l2_miss_ratio", "miss / access", "Share of level 2 cache requests that missed."},
        {"l2_hit_ratio", "1 - miss / access", "Share of level 2 cache requests that hit."}}},
      {"freq",
       "CPU cycles against reference cycles and CPU time: the clock the CPU really ran at",
       "perf stat's \"GHz\" (cycles / task-clock, tools/perf/util/stat-shadow.c); likwid's "
       "CLOCK group (cycles / reference cycles x nominal clock)",
       {{"cyc", "cycles", {"perf::CYCLES"}},
        {"ref", "ref_cycles", {"perf::REF-CYCLES"}},
        {"clock", "task_clock_seconds", {"perf::TASK-CLOCK"}}},
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
       "(arch/x86/events/intel/core.c) and perf stat --topdown",
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
      {"software",
       "the kernel's software events: CPU time, context switches, migrations, page faults "
       "(countable without a hardware PMU, in VMs too)",
       "perf stat's default software lines (\"CPUs utilized\", \"/sec\" per second of task-clock, "
       "tools/perf/util/stat-shadow.c)",
       {{"clock", "task_clock_seconds", {"perf::TASK-CLOCK"}},
        {"cs", "context_switches", {"perf::CONTEXT-SWITCHES"}},
        {"migrations", "cpu_migrations", {"perf::CPU-MIGRATIONS"}},
        {"faults", "page_faults", {"perf::PAGE-FAULTS"}}},
       {{"cpus_utilized", "clock", "CPUs kept busy: seconds of CPU time per second."},
        {"context_switches_per_cpu_second", "cs / clock",
         "Context switches per second of CPU time."},
        {"cpu_migrations_per_cpu_second", "migrations / clock",
         "CPU migrations per second of CPU time."},
        {"page_faults_per_cpu_second", "faults / clock", "Page faults per second of CPU time."}}},
  };
  return table;
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
      member.metric = member_row.metric;
      for (const char* candidate : member_row.candidates) {
        PapiEventConfig event;
        event.event = candidate;
        event.metric = member_row.metric;
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
