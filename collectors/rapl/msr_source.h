// RAPL through the msr driver: <devfs>/cpu/<cpu>/msr, opened read-only and only ever pread(),
// never written. 32-bit energy status registers in units of 2^-ESU J. In fixture trees the device
// is a regular file holding register r's 8 bytes at byte offset 8 * r (see MsrDevice).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "collectors/rapl/energy_source.h"
#include "collectors/rapl/rapl_config.h"
#include "topology/topology.h"

namespace hwperf::rapl {

namespace msr {
inline constexpr std::uint64_t kIntelPowerUnit = 0x606;
inline constexpr std::uint64_t kIntelPackageEnergy = 0x611;
inline constexpr std::uint64_t kIntelPackagePowerInfo = 0x614;
inline constexpr std::uint64_t kIntelDramEnergy = 0x619;
inline constexpr std::uint64_t kIntelPp0Energy = 0x639;  // core
inline constexpr std::uint64_t kIntelPp1Energy = 0x641;  // uncore
inline constexpr std::uint64_t kIntelPsysEnergy = 0x64D;
inline constexpr std::uint64_t kAmdPowerUnit = 0xC0010299;
inline constexpr std::uint64_t kAmdCoreEnergy = 0xC001029A;
inline constexpr std::uint64_t kAmdPackageEnergy = 0xC001029B;
}  // namespace msr

// The energy status unit exponent a domain counts in (one count = 2^-result J): the ESU field
// of the unit register (bits 12:8), except where Linux knows better: DRAM is fixed at 2^-16 J
// (15.3 uJ) on Haswell-EP and later servers up to Ice Lake-SP and on Xeon Phi, and psys counts
// whole joules on Sapphire/Emerald Rapids (arch/x86/events/rapl.c unit quirks).
unsigned energy_unit_exponent(const CpuIdentity& cpu, Domain domain, std::uint64_t unit_register);

ProbeResult open_msr_source(const PathsConfig& paths, const Topology& topology, DomainSet wanted);

}  // namespace hwperf::rapl
