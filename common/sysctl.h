// Kernel settings a remedy names, read under --path.procfs (in a container, where the host's
// /proc is mounted) rather than the process's own /proc.
#pragma once

#include <string>

namespace hwperf {

// <procfs>/sys/<name with dots as slashes>, trimmed: read_sysctl("/proc",
// "kernel.perf_event_paranoid") -> "2". "unknown (cannot read PATH)" when it cannot be read.
std::string read_sysctl(const std::string& procfs, const std::string& name);

}  // namespace hwperf
