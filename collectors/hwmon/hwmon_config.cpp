#include "collectors/hwmon/hwmon_config.h"

#include "config/schema_keys.h"

namespace hwperf {

config_schema::Key hwmon_settings_keys(yaml_reader::Problems& problems, Config& config) {
  using namespace config_schema;
  auto& hwmon = config.get<HwmonCollectorConfig>();
  return collector_section(
      problems, "hwmon", hwmon.enabled,
      {{between_key(problems, "interval_seconds", "collectors.hwmon.interval_seconds",
                    hwmon.interval_seconds, kMinHwmonIntervalSeconds, kMaxHwmonIntervalSeconds,
                    "seconds"),
        zero_or_between_key(problems, "stale_after_seconds", "collectors.hwmon.stale_after_seconds",
                            hwmon.stale_after_seconds, kMinHwmonStaleAfterSeconds,
                            kMaxHwmonStaleAfterSeconds, "never", "seconds")}});
}

}  // namespace hwperf
