// Which CPU this is (vendor, family, model), as the kernel reports it in <procfs>/cpuinfo. Read
// once with the topology; collectors that need it (RAPL's register layout and unit quirks, AMD's
// per-socket package energy) ask the Topology rather than reading procfs again.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace hwperf {

struct CpuIdentity {
  std::string vendor;  // "GenuineIntel", "AuthenticAMD", "HygonGenuine"
  unsigned family = 0;
  unsigned model = 0;
  std::string describe() const;  // "AuthenticAMD family 25 model 17"
};

// The first processor's vendor_id, cpu family and model from /proc/cpuinfo text; nothing when
// one of them is missing or out of range.
std::optional<CpuIdentity> parse_cpuinfo(std::string_view text);
// The same from <procfs_root>/cpuinfo; nothing when unreadable or incomplete.
std::optional<CpuIdentity> read_cpu_identity(const std::string& procfs_root);

}  // namespace hwperf
