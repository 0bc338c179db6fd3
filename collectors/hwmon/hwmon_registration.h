// The hwmon collector's entry in the collector registry (collectors/collector_entry.h), and what
// it finds on a machine, for the start and --check-config alike.
#pragma once

#include <string>
#include <vector>

#include "collectors/collector_entry.h"
#include "collectors/hwmon/hwmon_sysfs.h"
#include "collectors/hwmon/placement.h"

namespace hwperf {

CollectorEntry hwmon_collector_entry();

namespace hwmon {

// The meters under `sysfs_root`, placed on `topology`: what the collector will read.
struct Survey {
  std::string class_path;  // "<sysfs>/class/hwmon"
  Discovery discovery;     // discovery.sensors: only those placed
  SensorPlacement placement;
};
Survey survey_meters(const std::string& sysfs_root, const Topology& topology);

// One line per sensor read and per thing not read, as --check-config prints them (and the log).
std::vector<std::string> describe_survey(const Survey& survey);

}  // namespace hwmon
}  // namespace hwperf
