// The energy-source seam: each Linux interface (powercap, perf_event, MSR) and the tests' fake
// present the same thing, a list of counters with their wrap rule and unit, and raw reads. All
// energy arithmetic lives above this seam (energy.h, rapl_engine.h), none below it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/rapl/energy.h"
#include "collectors/rapl/rapl_config.h"
#include "common/files.h"
#include "common/text.h"
#include "common/interface.h"
#include "common/unique_fd.h"
#include "topology/cpu_identity.h"

namespace hwperf::rapl {

// AMD from family 17h and Hygon from 18h: package energy is one counter per socket however many
// dies (CCDs) it has, and the core energy register (0xC001029A) is per core. Every interface
// needs this, so it is here rather than in any one of them.
inline bool amd_rapl(const CpuIdentity& cpu) {
  return (cpu.vendor == "AuthenticAMD" && cpu.family >= 0x17) ||
         (cpu.vendor == "HygonGenuine" && cpu.family >= 0x18);
}

struct CounterInfo {
  Domain domain = Domain::package;
  // The hwloc package (Linux physical_package_id) the energy belongs to; empty for a
  // platform-wide psys counter.
  std::optional<unsigned> package;
  // Set only where the hardware counts per die (powercap "package-N-die-M", multi-die PMUs).
  std::optional<unsigned> die;
  CounterScale scale;
  std::string source;  // the file or event read, for messages
};

class EnergySource : public Interface {
 public:
  virtual RaplInterface interface() const = 0;  // printed with to_string()
  virtual const std::vector<CounterInfo>& counters() const = 0;
  // The raw counter now, or the errno that prevented the read. Called with the engine's lock
  // held, so never concurrently. Reads only through what the source's factory opened at startup
  // (files, devices, perf events): a read never opens anything, so it keeps working after the
  // process has given up the privileges that opening needed.
  virtual OrErrno<std::uint64_t> read(std::size_t index) = 0;
  // The largest power (watts) the hardware says each package may draw, from power-limit
  // registers or powercap constraints; packages it says nothing about are absent.
  virtual std::map<unsigned, double> package_power_hints() const { return {}; }
};

// The outcome of trying one interface at startup: a working source, or why not.
struct ProbeResult {
  RaplInterface interface = RaplInterface::automatic;  // which one was tried
  std::unique_ptr<EnergySource> source;                // null when the interface cannot be used
  std::string reason = "ok";                           // short code for the metric: ok, absent,
                                                       // permission_denied, unsupported, error
  std::string message;                                 // one line naming the thing and the remedy
};

// A failed probe of `interface`: `message` is prefixed "rapl: <interface>: " for the log.
inline ProbeResult probe_failure(RaplInterface interface, std::string reason,
                                 const std::string& message) {
  ProbeResult result;
  result.interface = interface;
  result.reason = std::move(reason);
  result.message = "rapl: " + std::string(to_string(interface)) + ": " + message;
  return result;
}

}  // namespace hwperf::rapl
