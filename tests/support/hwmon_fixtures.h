// Sysfs trees of hwmon power meters for the hwmon collector's tests (unit and end to end), built
// in a TempDir as the kernel lays them out, from the drivers' own strings (torvalds/linux):
// - the class entry /sys/class/hwmon/hwmonN is a link to the hwmon device, which sits below its
//   parent device (<device>/hwmon/hwmonN) and links back to it as `device`
//   (drivers/hwmon/hwmon.c __hwmon_device_register(): hdev->parent = dev, class "hwmon",
//   dev_set_name(hdev, "hwmon%d"));
// - acpi_power_meter.c: the attributes on the ACPI device (hwmonN/device/): "name" is
//   "power_meter", "power1_average" the meter's milliwatts times 1000, "power1_average_interval"
//   milliseconds, "power1_oem_info" the firmware's text; the hwmon device itself has no name
//   (hwmon_device_register());
// - xgene-hwmon.c: "apm_xgene" and its attributes on the hwmon device: power1_label "CPU power",
//   power2_label "IO power", power1_input and power2_input in microwatts;
// - ibmaem.c: "aem2" and energy1_input, energy2_input in microjoules on the platform device.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/support.h"
#include "topology/topology.h"

namespace hwperf::test::hwmon_fixture {

namespace fs = std::filesystem;

inline const char* kClass = "sys/class/hwmon/";

// The directories of one chip, relative to the TempDir's root.
struct Chip {
  std::string hwmon;   // sys/devices/<device>/hwmon/hwmonN
  std::string device;  // sys/devices/<device>
};

// hwmonN below `device_path` (under sys/devices), with the class link and the `device` link.
inline Chip add_chip(const TempDir& root, const std::string& hwmon,
                     const std::string& device_path) {
  Chip chip{"sys/devices/" + device_path + "/hwmon/" + hwmon, "sys/devices/" + device_path};
  fs::create_directories(root.path() / chip.hwmon);
  fs::create_directories(root.path() / kClass);
  fs::create_directory_symlink(fs::path("../../devices") / device_path / "hwmon" / hwmon,
                               root.path() / kClass / hwmon);
  // As the kernel writes it: up to the device's parent and down again.
  fs::create_directory_symlink("../../../" + fs::path(device_path).filename().string(),
                               root.path() / chip.hwmon / "device");
  return chip;
}

// Replaces `relative` whole (a new file renamed over it), as a reader that opens it anew sees a
// sysfs attribute change: never empty, never half written.
inline void set_value(const TempDir& root, const std::string& relative, const std::string& text) {
  const fs::path target = root.path() / relative;
  const fs::path next = target.string() + ".next";
  root.write(fs::relative(next, root.path()).string(), text);
  fs::rename(next, target);
}
inline void set_value(const TempDir& root, const std::string& relative, std::int64_t value) {
  set_value(root, relative, std::to_string(value) + "\n");
}

// An ACPI power meter (ACPI000D) as acpi_power_meter.c lays it out. Returns the attribute read.
inline std::string write_acpi_meter(const TempDir& root, const std::string& hwmon,
                                    const std::string& acpi_device, std::int64_t microwatts,
                                    const std::string& oem_info, unsigned interval_ms = 1000) {
  const Chip chip = add_chip(root, hwmon, "LNXSYSTM:00/LNXSYBUS:00/" + acpi_device);
  root.write(chip.device + "/name", "power_meter\n");
  root.write(chip.device + "/power1_average", std::to_string(microwatts) + "\n");
  root.write(chip.device + "/power1_average_interval", std::to_string(interval_ms) + "\n");
  root.write(chip.device + "/power1_oem_info", oem_info + "\n");
  root.write(chip.device + "/power1_model_number", "\n");
  root.write(chip.device + "/power1_is_battery", "0\n");
  return chip.device + "/power1_average";
}

// The x86 server's node meter (lm-sensors calls it power_meter-acpi-0): ACPI000D:00, no socket in
// its OEM text.
inline std::string write_power_meter_acpi(const TempDir& root, std::int64_t microwatts) {
  return write_acpi_meter(root, "hwmon1", "ACPI000D:00", microwatts, "Meter measures total domain");
}

// NVIDIA Grace CPU Superchip: per socket, meters of the socket, its CPU rail and its SoC rail,
// each an ACPI000D with its own hwmon device; `socket_numbers` as the firmware writes them.
// Returns the attribute of each meter, in the order socket 0 {Grace, CPU, SysIO}, socket 1 ...
inline std::vector<std::string> write_grace(const TempDir& root,
                                            const std::vector<unsigned>& socket_numbers,
                                            std::int64_t microwatts) {
  std::vector<std::string> attributes;
  unsigned index = 0;
  for (unsigned socket : socket_numbers) {
    for (const char* what : {"Grace", "CPU", "SysIO"}) {
      const std::string device = "ACPI000D:0" + std::to_string(index);
      attributes.push_back(
          write_acpi_meter(root, "hwmon" + std::to_string(index + 2), device, microwatts,
                           std::string(what) + " Power Socket " + std::to_string(socket), 50));
      ++index;
    }
  }
  return attributes;
}

// X-Gene / Altra SLIMpro: attributes on the hwmon device itself. Returns {power1, power2} inputs.
inline std::vector<std::string> write_xgene(const TempDir& root, std::int64_t cpu_microwatts,
                                            std::int64_t io_microwatts) {
  const Chip chip = add_chip(root, "hwmon0", "platform/APMC0D29:00");
  root.write(chip.hwmon + "/name", "apm_xgene\n");
  root.write(chip.hwmon + "/power1_label", "CPU power\n");
  root.write(chip.hwmon + "/power1_input", std::to_string(cpu_microwatts) + "\n");
  root.write(chip.hwmon + "/power2_label", "IO power\n");
  root.write(chip.hwmon + "/power2_input", std::to_string(io_microwatts) + "\n");
  root.write(chip.hwmon + "/temp1_label", "SoC Temperature\n");
  root.write(chip.hwmon + "/temp1_input", "45000\n");
  return {chip.hwmon + "/power1_input", chip.hwmon + "/power2_input"};
}

// IBM AEM 2 through the BMC: energy counters on the platform device. Returns energy1_input.
inline std::string write_aem2(const TempDir& root, const std::string& energy1,
                              const std::string& energy2 = "7000\n") {
  const Chip chip = add_chip(root, "hwmon4", "platform/aem.0");
  root.write(chip.device + "/name", "aem2\n");
  root.write(chip.device + "/energy1_input", energy1);
  root.write(chip.device + "/energy2_input", energy2);
  root.write(chip.device + "/power1_average_interval", "1000\n");
  return chip.device + "/energy1_input";
}

// A chip that is no power meter (a temperature sensor), seen and left alone.
inline void write_coretemp(const TempDir& root) {
  const Chip chip = add_chip(root, "hwmon0", "platform/coretemp.0");
  root.write(chip.hwmon + "/name", "coretemp\n");
  root.write(chip.hwmon + "/temp1_input", "42000\n");
}

// Two packages numbered as a two-socket Grace numbers them (36 and 2364), two CPUs each, NUMA
// node = socket.
inline Topology grace_topology() {
  std::vector<HardwareThread> threads = {
      {0, 0, 36, 0, 0}, {1, 1, 36, 0, 0}, {2, 0, 2364, 1, 0}, {3, 1, 2364, 1, 0}};
  return Topology(threads, {}, "test: Grace, packages 36 and 2364");
}

}  // namespace hwperf::test::hwmon_fixture
