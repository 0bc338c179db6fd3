// The meters under <--path.sysfs>/class/hwmon: found once at startup, then read through the
// directories found, never through a path resolved again.
//
// The tree is not trusted (a container may mount anything there): every directory and file is
// opened relative to its parent with O_NONBLOCK, attributes with O_NOFOLLOW (sysfs attributes
// are never links) and only if they are regular files, every read is bounded (one sysfs page for
// text, 64 bytes for a number), and at most kMaxChipEntries chips (entries named hwmon<N>, as the
// kernel names them) and kMaxChannels channels per chip are looked at. A FIFO, a link loop or a
// huge file is refused, said in the log, and never blocks.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collectors/hwmon/sensor_source.h"
#include "common/unique_fd.h"

namespace hwperf::hwmon {

inline constexpr std::size_t kMaxChipEntries = 256;
// Names of the class directory looked at, chips or not: a crowded tree costs a bounded readdir.
inline constexpr std::size_t kMaxDirectoryEntries = 65536;
inline constexpr unsigned kMaxChannels = 16;
// Text attributes (name, labels) are one line; a sysfs attribute is at most a page.
inline constexpr std::size_t kMaxTextBytes = 4096;
// A label as exported: printable ASCII, at most this long.
inline constexpr std::size_t kMaxLabelLength = 64;

// A sensor found, not yet placed on the topology.
struct FoundSensor {
  SensorSpec spec;                            // spec.package is placement's (placement.h)
  std::optional<unsigned> socket;             // the socket its label names
  int numa_node = -1;                         // the device's numa_node attribute, -1 when none
  std::shared_ptr<const UniqueFd> directory;  // the directory holding the attribute
  std::string attribute;                      // its name there ("power1_average")
  std::string entry;                          // the chip's class entry ("hwmon3")
};

struct Discovery {
  std::vector<FoundSensor> sensors;
  std::vector<std::string> chips;    // every chip seen, "hwmon0 (nvme)", read or not
  std::vector<std::string> refused;  // what could not be read and why: a link loop, a FIFO, ...
  std::vector<std::string> ignored;  // channels of a known chip that measure nothing exported
};

// Every sensor of a chip meters.h knows, in the order of the class directory's entries (hwmon0,
// hwmon1, ..., hwmon10). A missing class directory is no meter, not an error. Two hwmon devices
// of one device would give two series the same chip and sensor labels: their chip becomes
// "<device>/<entry>" ("ACPI000D:00/hwmon3").
Discovery discover_meters(const std::string& sysfs_root);

// Reads `sensors` through their directories: each read opens the attribute anew (so a device
// removed reads ENOENT or ENODEV, not its last value) and refuses what is not a regular file.
std::unique_ptr<SensorSource> make_sysfs_source(std::vector<FoundSensor> sensors);

// An attribute's number as hwmon prints it (an optional '-', digits, then only whitespace);
// nothing for anything else or a value outside 64 bits.
std::optional<std::int64_t> parse_reading(std::string_view text);

}  // namespace hwperf::hwmon
