// The uncore collector's settings (collectors.uncore: memory controller PMUs and the msr PMU) and
// their keys in the configuration file. On by default, best effort as PAPI's default events: its
// system-wide events need kernel.perf_event_paranoid <= 0 or CAP_PERFMON, and what this machine or
// these privileges do not allow is left out once at startup (logged, and in
// hwperf_uncore_source_available) while the exporter serves the rest.
#pragma once

#include "config/config.h"
#include "config/settings_keys.h"

namespace hwperf {

struct UncoreCollectorConfig {
  bool enabled = true;
  // What one package's memory can move, from its channels and their speed, which the PMUs do not
  // say: exported so that a rule can give the share of it in use. 0: not exported.
  double peak_memory_bytes_per_second = 0;
};

// 1 MB/s is no memory system; 100 TB/s is a hundred times today's HBM, so a larger figure is a
// typo (bits for bytes, an extra exponent).
inline constexpr double kMinPeakMemoryBytesPerSecond = 1e6;
inline constexpr double kMaxPeakMemoryBytesPerSecond = 1e14;

// collectors.uncore, bound to config.get<UncoreCollectorConfig>().
config_schema::Key uncore_settings_keys(yaml_reader::Problems& problems, Config& config);

}  // namespace hwperf
