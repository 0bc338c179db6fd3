#include "collectors/events/vocabulary.h"

#include <algorithm>
#include <cctype>

#include "collectors/metrics.h"
#include "common/text.h"

namespace hwperf::events {
namespace {

struct PresetName {
  const char* preset;
  const char* metric;
};

// Readable names for the presets people actually put on dashboards. Anything else falls back to
// the snake_case of the preset without "PAPI_" (PAPI_FUL_ICY -> ful_icy), which is stable but
// terse; `metric:` in the config overrides either.
constexpr PresetName kPresetNames[] = {
    {"PAPI_TOT_INS", "instructions"},
    {"PAPI_TOT_CYC", "cycles"},
    {"PAPI_REF_CYC", "reference_cycles"},
    {"PAPI_L1_DCM", "l1_data_cache_misses"},
    {"PAPI_L1_ICM", "l1_instruction_cache_misses"},
    {"PAPI_L1_TCM", "l1_cache_misses"},
    {"PAPI_L1_LDM", "l1_load_misses"},
    {"PAPI_L1_STM", "l1_store_misses"},
    {"PAPI_L2_DCM", "l2_data_cache_misses"},
    {"PAPI_L2_ICM", "l2_instruction_cache_misses"},
    {"PAPI_L2_TCM", "l2_cache_misses"},
    {"PAPI_L2_LDM", "l2_load_misses"},
    {"PAPI_L2_STM", "l2_store_misses"},
    {"PAPI_L2_DCA", "l2_data_cache_accesses"},
    {"PAPI_L2_DCH", "l2_data_cache_hits"},
    {"PAPI_L2_TCA", "l2_cache_accesses"},
    {"PAPI_L2_TCH", "l2_cache_hits"},
    {"PAPI_L3_DCM", "l3_data_cache_misses"},
    {"PAPI_L3_TCM", "l3_cache_misses"},
    {"PAPI_L3_DCA", "l3_data_cache_accesses"},
    {"PAPI_L3_TCA", "l3_cache_accesses"},
    {"PAPI_L3_LDM", "l3_load_misses"},
    {"PAPI_TLB_DM", "data_tlb_misses"},
    {"PAPI_TLB_IM", "instruction_tlb_misses"},
    {"PAPI_BR_INS", "branch_instructions"},
    {"PAPI_BR_MSP", "branch_mispredictions"},
    {"PAPI_BR_PRC", "branch_predictions_correct"},
    {"PAPI_BR_CN", "conditional_branch_instructions"},
    {"PAPI_BR_UCN", "unconditional_branch_instructions"},
    {"PAPI_BR_TKN", "branches_taken"},
    {"PAPI_BR_NTK", "branches_not_taken"},
    {"PAPI_LD_INS", "load_instructions"},
    {"PAPI_SR_INS", "store_instructions"},
    {"PAPI_LST_INS", "load_store_instructions"},
    {"PAPI_FP_INS", "floating_point_instructions"},
    {"PAPI_FP_OPS", "floating_point_operations"},
    {"PAPI_SP_OPS", "single_precision_operations"},
    {"PAPI_DP_OPS", "double_precision_operations"},
    {"PAPI_VEC_SP", "single_precision_vector_operations"},
    {"PAPI_VEC_DP", "double_precision_vector_operations"},
    {"PAPI_STL_ICY", "no_issue_cycles"},
    {"PAPI_STL_CCY", "no_completion_cycles"},
    {"PAPI_RES_STL", "resource_stall_cycles"},
    {"PAPI_MEM_WCY", "memory_write_stall_cycles"},
    {"PAPI_PRF_DM", "data_prefetch_misses"},
    {"PAPI_CA_SNP", "cache_snoops"},
};

struct SoftwareEvent {
  const char* base;  // upper case, as perf:: spells it
  const char* description;
  Unit unit;
  // The metric name where the snake_case of `base` would repeat the family's level
  // (hwperf_cpu_cpu_clock_seconds_total); nullptr for that snake_case.
  const char* metric = nullptr;
};

// perf's software events: PAPI describes them only by kernel constant (PERF_COUNT_SW_...).
constexpr SoftwareEvent kSoftwareEvents[] = {
    {"CPU-CLOCK",
     "Time from perf's cpu-clock timer; counted per CPU it advances with wall time, busy or idle",
     Unit::nanoseconds, "clock"},
    {"TASK-CLOCK", "Time tasks ran, from perf's task-clock timer", Unit::nanoseconds},
    {"PAGE-FAULTS", "Page faults", Unit::count},
    {"FAULTS", "Page faults", Unit::count},
    {"MINOR-FAULTS", "Minor page faults (no I/O needed)", Unit::count},
    {"MAJOR-FAULTS", "Major page faults (needed I/O)", Unit::count},
    {"CONTEXT-SWITCHES", "Context switches", Unit::count},
    {"CS", "Context switches", Unit::count},
    {"CPU-MIGRATIONS", "Task migrations onto this CPU", Unit::count, "migrations"},
    {"MIGRATIONS", "Task migrations onto this CPU", Unit::count},
    {"ALIGNMENT-FAULTS", "Alignment faults", Unit::count},
    {"EMULATION-FAULTS", "Emulation faults", Unit::count},
};

// The kernel's generic hardware events (perf_event_open's PERF_TYPE_HARDWARE), as libpfm4's perf
// PMU spells them. The kernel maps each onto whatever the CPU calls it, so they count on every CPU
// the kernel supports, including ones newer than PAPI's preset table. `preset` is the PAPI preset
// with the same meaning, or nullptr where the meanings differ: the generic cache events count what
// each vendor's driver chose (last-level references and misses on Intel, L1 instruction cache
// events on some AMD kernels), which is no PAPI_L*_TCM, so no preset is ever counted through them.
struct GenericEvent {
  const char* names[2];  // perf:: base names, upper case; the second one is an alias or nullptr
  const char* metric;
  const char* description;
  const char* preset;
};
constexpr GenericEvent kGenericEvents[] = {
    {{"INSTRUCTIONS", nullptr}, "instructions", "Instructions retired", "PAPI_TOT_INS"},
    {{"CYCLES", "CPU-CYCLES"},
     "cycles",
     "Core cycles (stop while the CPU is halted)",
     "PAPI_TOT_CYC"},
    {{"REF-CYCLES", nullptr},
     "reference_cycles",
     "Reference cycles at the nominal frequency, unaffected by frequency scaling",
     "PAPI_REF_CYC"},
    {{"BRANCH-INSTRUCTIONS", "BRANCHES"},
     "branch_instructions",
     "Branch instructions retired",
     "PAPI_BR_INS"},
    {{"BRANCH-MISSES", nullptr}, "branch_mispredictions", "Mispredicted branches", "PAPI_BR_MSP"},
    {{"CACHE-REFERENCES", nullptr},
     "cache_references",
     "Cache references as the kernel's generic event defines them for this CPU (usually the "
     "last-level cache)",
     nullptr},
    {{"CACHE-MISSES", nullptr},
     "cache_misses",
     "Cache misses as the kernel's generic event defines them for this CPU (usually the "
     "last-level cache)",
     nullptr},
};

const GenericEvent* find_generic_event(std::string_view event) {
  const EventName name = parse_event_name(event);
  if (to_lower(name.pmu) != "perf") return nullptr;
  const std::string base = to_upper(name.base);
  for (const auto& generic : kGenericEvents) {
    for (const char* alias : generic.names) {
      if (alias != nullptr && base == alias) return &generic;
    }
  }
  return nullptr;
}

const SoftwareEvent* find_software_event(std::string_view event) {
  const EventName name = parse_event_name(event);
  // Only perf's own PMU (or no PMU prefix, which PAPI resolves to it) has these events.
  if (!name.pmu.empty() && to_lower(name.pmu) != "perf") return nullptr;
  const std::string base = to_upper(name.base);
  for (const auto& sw : kSoftwareEvents) {
    if (base == sw.base) return &sw;
  }
  return nullptr;
}

bool is_domain_qualifier(std::string_view qualifier) {
  const std::string q = to_lower(qualifier);
  return q == "u" || q == "k" || q.rfind("u=", 0) == 0 || q.rfind("k=", 0) == 0;
}

}  // namespace

EventName parse_event_name(std::string_view event) {
  EventName name;
  std::string_view rest = event;
  if (const auto pos = rest.find("::"); pos != std::string_view::npos) {
    name.pmu = std::string(rest.substr(0, pos));
    rest.remove_prefix(pos + 2);
  }
  auto colon = rest.find(':');
  name.base = std::string(rest.substr(0, colon));
  while (colon != std::string_view::npos) {
    rest.remove_prefix(colon + 1);
    colon = rest.find(':');
    name.qualifiers.emplace_back(rest.substr(0, colon));
  }
  return name;
}

bool is_preset(std::string_view event) {
  return event.rfind("PAPI_", 0) == 0 && event.find(':') == std::string_view::npos;
}

std::string default_metric_base(std::string_view event) {
  if (is_preset(event)) {
    for (const auto& entry : kPresetNames) {
      if (event == entry.preset) return entry.metric;
    }
    return to_snake_case(event.substr(5));
  }
  const EventName name = parse_event_name(event);
  // A generic event gets the name of the preset with its meaning, so a dashboard works whether a
  // machine counts PAPI_TOT_INS or perf::INSTRUCTIONS.
  const GenericEvent* generic = find_generic_event(event);
  const SoftwareEvent* software = find_software_event(event);
  std::string joined = generic != nullptr                                   ? generic->metric
                       : software != nullptr && software->metric != nullptr ? software->metric
                                                                            : name.base;
  for (const auto& qualifier : name.qualifiers) joined += "_" + qualifier;
  std::string base = to_snake_case(joined);
  if (event_unit(event) == Unit::nanoseconds) base += "_seconds";
  return base;
}

Unit event_unit(std::string_view event) {
  const SoftwareEvent* sw = find_software_event(event);
  return sw == nullptr ? Unit::count : sw->unit;
}

std::string builtin_description(std::string_view event) {
  if (const GenericEvent* generic = find_generic_event(event)) {
    return std::string(generic->description) + " (the kernel's generic hardware event)";
  }
  const SoftwareEvent* sw = find_software_event(event);
  return sw == nullptr ? std::string() : std::string(sw->description);
}

std::optional<std::string> generic_equivalent(std::string_view preset) {
  for (const auto& generic : kGenericEvents) {
    if (generic.preset != nullptr && preset == generic.preset) {
      return "perf::" + std::string(generic.names[0]);
    }
  }
  return std::nullopt;
}

std::string choose_counted_as(const std::string& event,
                              const std::function<EventStatus(const std::string&)>& status_of) {
  if (!is_preset(event)) return event;
  const EventStatus status = status_of(event);
  if (!status.known || status.defined) return event;
  const auto generic = generic_equivalent(event);
  if (!generic || !status_of(*generic).known) return event;
  return *generic;
}

bool has_domain_qualifier(std::string_view event) {
  const auto qualifiers = parse_event_name(event).qualifiers;
  return std::any_of(qualifiers.begin(), qualifiers.end(), is_domain_qualifier);
}

std::optional<QualifiedDomain> qualified_domain(std::string_view event) {
  std::optional<QualifiedDomain> domain;
  for (const auto& qualifier : parse_event_name(event).qualifiers) {
    if (!is_domain_qualifier(qualifier)) continue;
    if (!domain) domain.emplace();
    const std::string q = to_lower(qualifier);
    // libpfm4 booleans: no value means true, else one of 1/y/t (true) or 0/n/f (false).
    const bool on = q.size() == 1 || q[2] == '1' || q[2] == 'y' || q[2] == 't';
    (q[0] == 'u' ? domain->user : domain->kernel) = on;
  }
  return domain;
}

bool has_cpu_qualifier(std::string_view event) {
  const auto qualifiers = parse_event_name(event).qualifiers;
  return std::any_of(qualifiers.begin(), qualifiers.end(),
                     [](const std::string& q) { return to_lower(q).rfind("cpu=", 0) == 0; });
}

std::optional<std::string> sampling_qualifier(std::string_view event) {
  // libpfm4's perf_event attributes that turn counting into sampling (lib/pfmlib_perf_event.c:
  // period -> sample_period, freq -> sample_freq, hw_smpl -> precise sampling). PAPI then arms
  // overflow signalling, which would end the process at the first overflow.
  static const char* const kSampling[] = {"period", "freq", "hw_smpl"};
  for (const auto& qualifier : parse_event_name(event).qualifiers) {
    const std::string name = to_lower(qualifier.substr(0, qualifier.find('=')));
    for (const char* sampling : kSampling) {
      if (name == sampling) return qualifier;
    }
  }
  return std::nullopt;
}

std::string cpu_qualified_name(std::string_view native_event, unsigned cpu, CountingDomain domain) {
  std::string name(native_event);
  name += ":cpu=" + std::to_string(cpu);
  // This path exists for machines where PAPI_set_opt(PAPI_DOMAIN) fails (it probes a hardware
  // counter, like PAPI_CPU_ATTACH), so the domain goes into u/k qualifiers. perf_event prefers an
  // event's own u/k bits to the set's domain, so a domain the user wrote into the name wins.
  if (!has_domain_qualifier(native_event)) {
    switch (domain) {
      case CountingDomain::user: name += ":u=1:k=0"; break;
      case CountingDomain::kernel: name += ":u=0:k=1"; break;
      case CountingDomain::all: name += ":u=1:k=1"; break;
    }
  }
  return name;
}

}  // namespace hwperf::events
