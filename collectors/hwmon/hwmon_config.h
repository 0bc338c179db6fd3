// The hwmon collector's settings (collectors.hwmon) and their keys in the configuration file:
// power meters the kernel's hwmon class exposes (ACPI power meters, X-Gene SLIMpro, IBM AEM),
// energy counted by the chip, or power integrated into joules on a tick of the collector's own.
#pragma once

#include "config/config.h"
#include "config/settings_keys.h"

namespace hwperf {

// A tick below 10 ms would only burn CPU (an ACPI meter's driver serves a cached value for its
// sampling time anyway); above a minute the integral would hold one reading for too long.
inline constexpr double kMinHwmonIntervalSeconds = 0.01;
inline constexpr double kMaxHwmonIntervalSeconds = 60;
// A reading unchanged for a day is stuck; below a second every steady load would look stuck.
inline constexpr double kMinHwmonStaleAfterSeconds = 1;
inline constexpr double kMaxHwmonStaleAfterSeconds = 86400;

struct HwmonCollectorConfig {
  bool enabled = true;  // best effort: on where meters exist, says so where none do
  // How often every meter is read: power readings are integrated between two reads.
  double interval_seconds = 1;
  // A reading that has not changed for longer than this is stuck: its joules stop growing and its
  // state says `stale` until it moves again. 0: never.
  double stale_after_seconds = 300;
};

// collectors.hwmon, bound to config.get<HwmonCollectorConfig>().
config_schema::Key hwmon_settings_keys(yaml_reader::Problems& problems, Config& config);

}  // namespace hwperf
