// The `hwmon` collector: the joules of the power meters hwmon exposes (meters.h), per kind of
// meter, with each sensor's state. Its engine is ticked by a thread of its own every
// collectors.hwmon.interval_seconds; a scrape only copies the last tick's totals.
//   hwperf_hwmon_<kind>_joules_total{[package,] chip, sensor, source}, kind node, module,
//     package, cpu_rail, sysio_rail (meters.h kKinds); source counter or integrated
//   hwperf_hwmon_sensor_state{chip, sensor, state}, hwperf_hwmon_read_errors_total,
//   hwperf_hwmon_unmeasured_seconds_total, hwperf_hwmon_wraps_total (counters){chip, sensor}
//   constant: hwperf_hwmon_energy_available, hwperf_hwmon_interval_seconds,
//   hwperf_hwmon_sensor_info{chip, sensor, name, label, kind, source [, package]},
//   hwperf_hwmon_average_interval_seconds{chip, sensor}
#pragma once

#include <memory>

#include "collectors/collector.h"
#include "collectors/hwmon/hwmon_engine.h"

namespace hwperf::hwmon {

// The collector of `engine`'s sensors (none: only hwperf_hwmon_energy_available 0). With
// `tick_in_background`, a thread ticks the engine every settings().interval_seconds until the
// collector is destroyed; without it (tests), whoever holds the engine ticks it.
std::unique_ptr<Collector> make_hwmon_collector(std::unique_ptr<HwmonEngine> engine,
                                                bool tick_in_background = true);

}  // namespace hwperf::hwmon
