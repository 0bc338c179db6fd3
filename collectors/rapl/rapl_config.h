// The RAPL collector's settings (collectors.rapl) and their keys in the configuration file.
#pragma once

#include <vector>

#include "common/enum_names.h"
#include "config/config.h"
#include "config/settings_keys.h"

namespace hwperf {

enum class RaplInterface { automatic, powercap, perf, msr };
inline constexpr EnumName<RaplInterface> kRaplInterfaceNames[] = {
    {RaplInterface::automatic, "auto"},
    {RaplInterface::powercap, "powercap"},
    {RaplInterface::perf, "perf"},
    {RaplInterface::msr, "msr"}};

enum class RaplDomain { package, core, uncore, dram, psys };
inline constexpr EnumName<RaplDomain> kRaplDomainNames[] = {{RaplDomain::package, "package"},
                                                            {RaplDomain::core, "core"},
                                                            {RaplDomain::uncore, "uncore"},
                                                            {RaplDomain::dram, "dram"},
                                                            {RaplDomain::psys, "psys"}};

inline const char* to_string(RaplInterface value) { return name_of(kRaplInterfaceNames, value); }
inline const char* to_string(RaplDomain value) { return name_of(kRaplDomainNames, value); }

// A wrap guard faster than the hardware updates its counters (about every millisecond) would
// only burn CPU.
inline constexpr double kMinWrapGuardIntervalSeconds = 0.001;
// A guard slower than an hour would let any RAPL counter wrap unseen (the longest wraps in minutes
// at full power), and a larger figure overflows the guard's timed wait.
inline constexpr double kMaxWrapGuardIntervalSeconds = 3600;
// No package draws 100 kW; a larger figure is a typo that would disable the plausibility check.
inline constexpr double kMaxPowerWatts = 100000;

struct RaplCollectorConfig {
  bool enabled = true;
  RaplInterface interface = RaplInterface::automatic;
  // Empty means every domain found.
  std::vector<RaplDomain> domains;
  // Upper bound on what one package can draw, used to size the wrap guard period and to reject
  // implausible deltas. 0 = take it from the hardware (power limit registers / constraints).
  double max_power_watts = 0;
  // 0 = derive from the counter range and max power (see collectors/rapl).
  double wrap_guard_interval_seconds = 0;
};

// collectors.rapl, bound to config.get<RaplCollectorConfig>().
config_schema::Key rapl_settings_keys(yaml_reader::Problems& problems, Config& config);

}  // namespace hwperf
