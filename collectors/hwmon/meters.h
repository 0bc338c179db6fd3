// The power meters this collector reads, as data: which hwmon chips (by their `name` attribute),
// which of their attributes, and what each sensor measures by what its label says. Everything
// else about a chip (where its files are, how they are read) is the reader's (hwmon_sysfs.h); the
// families each kind of meter is exported as are named here, once.
//
// Sources, Linux (torvalds/linux): Documentation/hwmon/sysfs-interface.rst ("Power", "Energy":
// power*_average and power*_input in microwatts, power*_average_interval in milliseconds,
// energy*_input in microjoules); drivers/hwmon/acpi_power_meter.c, xgene-hwmon.c and ibmaem.c
// (the attribute names and files of each chip, cited in meters.cpp).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hwperf::hwmon {

// What a sensor measures. Each is its own family: a node meter includes the packages, a module
// its CPU rail, so adding series of two kinds counts the same watts twice.
enum class Kind { node, module, package, cpu_rail, sysio_rail };

struct KindInfo {
  Kind kind;
  const char* name;  // the family's part (hwperf_hwmon_<name>_joules_total) and the info label
  bool per_package;  // the series carry a `package` label
  const char* help;
};
// The families' HELP is `help` and what collectors/hwmon/hwmon_collector.cpp adds to every one.
inline constexpr KindInfo kKinds[] = {
    {Kind::node, "node", false, "Energy of the whole node at its power supply's input."},
    {Kind::module, "module", true, "Energy of a socket module (Grace Hopper: CPU, GPU, memory)."},
    {Kind::package, "package", true, "Energy of a CPU package as its socket's meter reports it."},
    {Kind::cpu_rail, "cpu_rail", true, "Energy of a package's CPU rail, part of the package."},
    {Kind::sysio_rail, "sysio_rail", true, "Energy of a package's SoC and I/O rail, part of it."},
};
const KindInfo& kind_info(Kind kind);

// Energy the chip counts itself, or power readings the collector integrates over time.
enum class Source { counter, integrated };
const char* to_string(Source source);

// A chip this collector reads. `attribute` is the reading of channel N with N in place of '#'.
struct MeterChip {
  const char* name;              // the hwmon `name` attribute
  const char* driver;            // drivers/hwmon/<file>, for the documentation and messages
  Source source;                 // counter: energy#_input; integrated: a power attribute
  const char* attribute;         // "power#_average"
  const char* label;             // "power#_oem_info", "power#_label", or nullptr
  const char* average_interval;  // "power#_average_interval" (milliseconds), or nullptr
};
const std::vector<MeterChip>& meter_chips();
const MeterChip* find_meter_chip(std::string_view name);
// `pattern` with its '#' replaced by `channel`.
std::string channel_attribute(const char* pattern, unsigned channel);

// What one sensor of `chip` measures, from its channel and label: its kind, and the socket its
// label names ("CPU Power Socket 1"), if any. Nothing for a sensor the table does not know (an
// X-Gene channel other than its two power rails, an AEM energy register other than the first),
// which is not read.
struct Classification {
  Kind kind = Kind::node;
  std::optional<unsigned> socket;
};
std::optional<Classification> classify(const MeterChip& chip, unsigned channel,
                                       std::string_view label);

}  // namespace hwperf::hwmon
