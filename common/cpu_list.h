#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hwperf {

// Parses a Linux CPU list ("0-3,8,10-11", as in /sys/devices/system/cpu/online and cpuset files)
// into ascending, unique CPU numbers. Throws std::invalid_argument naming the offending part.
std::vector<unsigned> parse_cpu_list(std::string_view text);
// The inverse, with ranges folded: {0,1,2,3,8} -> "0-3,8".
std::string format_cpu_list(const std::vector<unsigned>& cpus);

// The CPUs online now (<sysfs>/devices/system/cpu/online); nullopt when it cannot be read or
// parsed. Collectors that follow CPU hotplug read it in the background.
std::optional<std::vector<unsigned>> read_online_cpus(const std::string& sysfs);

}  // namespace hwperf
