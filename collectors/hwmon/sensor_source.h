// The meter seam: the sysfs reader (hwmon_sysfs.h) and the tests' fakes present the same thing,
// a list of sensors with what each measures, and raw reads. Everything done with the readings
// (integration, wraps, states) is above it, in hwmon_engine.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collectors/hwmon/meters.h"
#include "common/files.h"
#include "common/interface.h"

namespace hwperf::hwmon {

struct SensorSpec {
  std::string chip;    // the device the hwmon chip belongs to ("ACPI000D:00"): stable across boots
  std::string sensor;  // the channel ("power1", "energy1")
  std::string name;    // the hwmon chip's name attribute ("power_meter")
  std::string label;   // what the chip says the channel measures ("CPU Power Socket 0"); may be ""
  Kind kind = Kind::node;
  std::optional<unsigned> package;  // set exactly when kind_info(kind).per_package
  Source source = Source::integrated;
  std::string path;  // the attribute read, for messages
  // power#_average_interval: the time each power reading averages over; 0 when not given.
  double average_interval_seconds = 0;
};

class SensorSource : public Interface {
 public:
  virtual const std::vector<SensorSpec>& sensors() const = 0;
  // The reading now, as the attribute holds it (microwatts or microjoules), or the errno that
  // prevented it: ENOENT or ENODEV once the device is gone, ENODATA for a sensor without data,
  // EINVAL for text that is not a number, ENOTSUP for a file that is not a regular file. Called
  // from one thread at a time (the collector's tick); may block as long as the driver does.
  virtual OrErrno<std::int64_t> read(std::size_t index) = 0;
};

}  // namespace hwperf::hwmon
