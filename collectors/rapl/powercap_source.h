// RAPL through the powercap class: <sysfs>/class/powercap/intel-rapl:* (and intel-rapl-mmio:*),
// energy_uj in microjoules, each zone wrapping at its own max_energy_range_uj. Every energy_uj is
// opened once, by open_powercap_source(), and read with pread at offset 0 from then on.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "collectors/rapl/energy_source.h"
#include "topology/topology.h"

namespace hwperf::rapl {

// What a zone's `name` file says. The directory index (intel-rapl:N) is not the package id: on a
// client the platform zone "psys" can be intel-rapl:1, and zones enumerate in hotplug order.
struct ZoneName {
  Domain domain = Domain::package;
  std::optional<unsigned> package;
  std::optional<unsigned> die;
};
// "package-N", "package-N-die-M", "psys", "psys-N" (top-level zones) and "core", "uncore",
// "dram" (subzones, whose package comes from the parent). Anything else is not ours.
std::optional<ZoneName> parse_zone_name(std::string_view name);

// `cpu`, from --path.procfs: on AMD and Hygon the `core` subzone is left out (see the .cpp).
ProbeResult open_powercap_source(const std::string& sysfs_root, const Topology& topology,
                                 DomainSet wanted,
                                 const std::optional<CpuIdentity>& cpu = std::nullopt);

}  // namespace hwperf::rapl
