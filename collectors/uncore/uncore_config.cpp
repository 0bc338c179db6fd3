#include "collectors/uncore/uncore_config.h"

#include "config/schema_keys.h"

namespace hwperf {

config_schema::Key uncore_settings_keys(yaml_reader::Problems& problems, Config& config) {
  auto& uncore = config.get<UncoreCollectorConfig>();
  auto peak = config_schema::zero_or_between_key(
      problems, "peak_memory_bytes_per_second", "collectors.uncore.peak_memory_bytes_per_second",
      uncore.peak_memory_bytes_per_second, kMinPeakMemoryBytesPerSecond,
      kMaxPeakMemoryBytesPerSecond, "not exported", "bytes per second");
  return config_schema::collector_section(problems, "uncore", uncore.enabled, {{peak}});
}

}  // namespace hwperf
