// The `uncore` collector: memory traffic per package from the memory controllers' PMUs, and the
// aperf/mperf/tsc cycle counters per CPU from the msr PMU, opened once at startup (uncore_plan.h)
// through a CounterBackend; a scrape only reads.
//   hwperf_memory_read_bytes_total{package}, hwperf_memory_write_bytes_total{package}, or
//   hwperf_memory_bytes_total{package} where the controllers count reads and writes together
//   hwperf_msr_aperf_cycles_total{cpu,package}, hwperf_msr_mperf_cycles_total{cpu,package},
//   hwperf_msr_tsc_cycles_total{cpu,package} (not hwperf_cpu_*: the PAPI collector's
//   aperf_mperf group exports hwperf_cpu_aperf_cycles_total, and both may be enabled)
//   the resctrl families (resctrl.h) when `resctrl` has counters
//   hwperf_uncore_source_available{source,pmu,reason}
//   hwperf_memory_peak_bytes_per_second{package} when a peak is configured
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "collectors/collector.h"
#include "collectors/uncore/counter_backend.h"
#include "collectors/uncore/resctrl.h"
#include "collectors/uncore/uncore_plan.h"

namespace hwperf::uncore {

// Opens every counter of `plan` through `backend`. A quantity any of whose counters cannot be
// opened is not counted at all (a package sum missing a box would be a wrong number), and its
// state says why: permission_denied (with kernel.perf_event_paranoid from `procfs_root` and the
// remedy) or open_failed. Logs each quantity not counted, once. Never throws for the machine.
// With `peak_memory_bytes_per_second` above 0, every package whose memory traffic is counted also
// gets hwperf_memory_peak_bytes_per_second{package}, a constant gauge.
std::unique_ptr<Collector> make_uncore_collector(UncorePlan plan,
                                                 std::unique_ptr<CounterBackend> backend,
                                                 const std::string& procfs_root,
                                                 ResctrlSource resctrl = {},
                                                 double peak_memory_bytes_per_second = 0);

}  // namespace hwperf::uncore
