// Event names to perf_event_attr encodings through libpfm4, the library PAPI itself loads: the
// same vocabulary as the PAPI collector (perf::TASK-CLOCK, adl_glc::INST_RETIRED:ANY, and the
// kernel's generic events), without PAPI, which has no per-process or per-cgroup mode.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>

#include "collectors/perf/perf_event.h"
#include "collectors/events/specs.h"

namespace hwperf::perf {

// Initialises libpfm4 (idempotent; PAPI shares the library and its state, so it is never
// terminated). Throws std::runtime_error naming libpfm4's error, e.g. when LIBPFM_FORCE_PMU
// names a PMU this libpfm4 does not know.
void initialize_pfm();

// encode_event's error when libpfm4 cannot encode the name on this machine's PMUs: an event (or a
// qualifier) another vendor's PMU has, or a typo. Its message is libpfm4's reason.
class UnknownEvent : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// This machine's core PMU as libpfm4 names it, for messages about what was tried here:
// "libpfm4's core PMU is amd64_fam19h_zen4 (AMD64 Fam19h Zen4)" (LIBPFM_FORCE_PMU's when set).
std::string core_pmu_text();

// The encoding of a native or generic event name, with its own u/k qualifiers winning over
// `domain`. A PAPI preset still left here (the caller resolves those PAPI defines as one native
// event) is encoded through the kernel's generic event with exactly its meaning
// (PAPI_TOT_INS -> perf::INSTRUCTIONS). Throws std::invalid_argument with libpfm4's reason, and
// for qualifiers that would sample (period=, freq=) or pin a CPU (cpu=); UnknownEvent for a name
// libpfm4 cannot encode here: a counter that samples
// would signal the exporter, and CPUs are chosen by the collector.
EventEncoding encode_event(const std::string& name, CountingDomain domain);

}  // namespace hwperf::perf
