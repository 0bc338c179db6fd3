// RAPL through perf_event: the `power` PMU (<sysfs>/bus/event_source/devices/power) with one
// system-wide event per package (or die) and domain, and AMD's per-core `power_core` PMU.
// Counts are 64-bit, but the kernel adds each update as a signed 32-bit hardware delta, so they
// need reading often enough too (energy.h, CounterScale::range); .scale turns them into joules.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "collectors/perf/pmu_sysfs.h"
#include "collectors/rapl/energy_source.h"
#include "topology/topology.h"

namespace hwperf::rapl {

// Counts per joule from a .scale file ("2.3283064365386962890625e-10" = 2^-32 J): the reciprocal
// must be a whole number (all RAPL scales are 2^-n J) so the total stays exact in integers.
std::optional<std::uint64_t> counts_per_joule_from_scale(std::string_view scale_text);

// The RAPL hardware energy unit, in joules, as powercap reveals it: its max_energy_range_uj is
// 0xFFFFFFFF units (drivers/powercap/intel_rapl_common.c, rapl_unit_xlate of the 32-bit status
// mask). The smallest over every intel-rapl zone under <sysfs>/class/powercap; nothing when no
// zone is readable.
std::optional<double> powercap_energy_unit_joules(const std::string& sysfs_root);

ProbeResult open_perf_source(const std::string& sysfs_root, const std::string& procfs_root,
                             const Topology& topology, DomainSet wanted);

}  // namespace hwperf::rapl
