#include "collectors/hwmon/meters.h"

#include <regex>

#include "common/text.h"

namespace hwperf::hwmon {

const KindInfo& kind_info(Kind kind) {
  for (const auto& info : kKinds) {
    if (info.kind == kind) return info;
  }
  return kKinds[0];
}

const char* to_string(Source source) {
  return source == Source::counter ? "counter" : "integrated";
}

// The chips, from the drivers in torvalds/linux:
// - power_meter: drivers/hwmon/acpi_power_meter.c (read at 00f4095c). ACPI000D devices. The
//   driver names its reading POWER_AVERAGE_NAME "power1_average" and its averaging interval
//   POWER_AVG_INTERVAL_NAME "power1_average_interval" (milliseconds, show_avg_interval());
//   show_power() prints the meter's milliwatts times 1000; misc_attrs[] adds "name"
//   ("power_meter") and "power1_oem_info", the firmware's text ("CPU Power Socket 0" on NVIDIA
//   Grace). register_attrs() creates them on the ACPI device with device_create_file(), and
//   hwmon_device_register() gives the hwmon device no name: they are read under hwmonN/device/.
// - apm_xgene: drivers/hwmon/xgene-hwmon.c (read at 024e0a28). X-Gene and Ampere Altra's
//   SLIMpro. hwmon_device_register_with_groups(..., "apm_xgene", ...) puts the attributes on the
//   hwmon device itself: power1_input (CPU, power1_label "CPU power") and power2_input (SoC I/O,
//   power2_label "IO power"), milliwatts times 1000; a read of invalid data is -ENODATA.
// - aem1, aem2: drivers/hwmon/ibmaem.c (read at 09bf825e). IBM System x Active Energy Manager
//   through the BMC. energy1_input (aem2 also energy2_input) prints the firmware's 64-bit
//   millijoules times 1000 (aem_show_energy()); "energy used since the BMC started", so it
//   goes back to 0 when the BMC resets. Its power#_average is never read: aem_show_power()
//   sleeps for the averaging period inside the read, and power3-7_average are power caps.
const std::vector<MeterChip>& meter_chips() {
  static const std::vector<MeterChip> chips = {
      {"power_meter", "acpi_power_meter.c", Source::integrated, "power#_average", "power#_oem_info",
       "power#_average_interval"},
      {"apm_xgene", "xgene-hwmon.c", Source::integrated, "power#_input", "power#_label", nullptr},
      {"aem1", "ibmaem.c", Source::counter, "energy#_input", nullptr, nullptr},
      {"aem2", "ibmaem.c", Source::counter, "energy#_input", nullptr, nullptr},
  };
  return chips;
}

const MeterChip* find_meter_chip(std::string_view name) {
  for (const auto& chip : meter_chips()) {
    if (name == chip.name) return &chip;
  }
  return nullptr;
}

std::string channel_attribute(const char* pattern, unsigned channel) {
  std::string text = pattern;
  const auto at = text.find('#');
  if (at != std::string::npos) text.replace(at, 1, std::to_string(channel));
  return text;
}

namespace {

// NVIDIA Grace's ACPI power meters name what they measure and the socket: "Module Power Socket
// 0", "Grace Power Socket 0", "CPU Power Socket 0", "SysIO Power Socket 0".
std::optional<Classification> classify_acpi_meter(std::string_view label) {
  static const std::regex socket_meter(R"(^\s*(module|grace|cpu|sysio) power socket (\d{1,6})\s*$)",
                                       std::regex::icase);
  std::cmatch match;
  if (!std::regex_match(label.begin(), label.end(), match, socket_meter)) {
    return Classification{Kind::node, std::nullopt};  // a platform meter measures the node
  }
  const std::string what = to_lower(match[1].str());
  const auto socket = static_cast<unsigned>(std::stoul(match[2].str()));
  const Kind kind = what == "module"  ? Kind::module
                    : what == "cpu"   ? Kind::cpu_rail
                    : what == "sysio" ? Kind::sysio_rail
                                      : Kind::package;  // "grace": the socket
  return Classification{kind, socket};
}

std::optional<Classification> classify_xgene(unsigned channel, std::string_view label) {
  if (channel == 1 && label == "CPU power") return Classification{Kind::cpu_rail, std::nullopt};
  if (channel == 2 && label == "IO power") return Classification{Kind::sysio_rail, std::nullopt};
  return std::nullopt;
}

}  // namespace

std::optional<Classification> classify(const MeterChip& chip, unsigned channel,
                                       std::string_view label) {
  const std::string_view name = chip.name;
  if (name == "power_meter") return classify_acpi_meter(label);
  if (name == "apm_xgene") return classify_xgene(channel, label);
  // AEM: the first energy register is the system's; what the second measures is not documented.
  if (channel == 1) return Classification{Kind::node, std::nullopt};
  return std::nullopt;
}

}  // namespace hwperf::hwmon
