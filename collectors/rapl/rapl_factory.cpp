// From configuration to a running RAPL collector: validate, probe the interfaces in order, and
// hand the first that works to the collector.
#include "collectors/rapl/rapl_factory.h"

#include <cmath>
#include <cstdio>

#include "collectors/rapl/msr_source.h"
#include "collectors/rapl/perf_source.h"
#include "collectors/rapl/powercap_source.h"
#include "collectors/rapl/rapl_collector.h"
#include "common/text.h"
#include "config/errors.h"

namespace hwperf {
namespace rapl {
DomainSet validate_rapl_config(const RaplCollectorConfig& config) {
  std::vector<std::string> problems;
  DomainSet wanted = config.domains.empty() ? DomainSet::all() : DomainSet::none();
  for (RaplDomain domain : config.domains) wanted.insert(domain);
  if (!std::isfinite(config.max_power_watts) || config.max_power_watts < 0) {
    problems.push_back("collectors.rapl.max_power_watts: must be a finite number >= 0 (0 = from "
                       "the hardware), got " + format_number(config.max_power_watts));
  }
  const double guard = config.wrap_guard_interval_seconds;
  if (!std::isfinite(guard) || guard < 0 || (guard > 0 && guard < kMinWrapGuardIntervalSeconds)) {
    problems.push_back("collectors.rapl.wrap_guard_interval_seconds: must be 0 (derived) or at "
                       "least " + format_number(kMinWrapGuardIntervalSeconds) + ", got " +
                       format_number(guard));
  }
  if (!problems.empty()) throw ConfigError(problems);
  return wanted;
}

std::vector<RaplInterface> interface_order(RaplInterface choice) {
  if (choice != RaplInterface::automatic) return {choice};
  // perf: 64-bit kernel counts, kernel-maintained units; powercap: kernel units but
  // 32-bit-range values; msr: raw device access and our own model quirks. See the "RAPL
  // collector" section of README.md.
  return {RaplInterface::perf, RaplInterface::powercap, RaplInterface::msr};
}

std::vector<ProbeResult> probe_interfaces(RaplInterface choice, const PathsConfig& paths,
                                          const Topology& topology, DomainSet wanted) {
  std::vector<ProbeResult> results;
  for (RaplInterface interface : interface_order(choice)) {
    ProbeResult result;
    switch (interface) {
      case RaplInterface::perf:
        result = open_perf_source(paths.sysfs, paths.procfs, topology, wanted);
        break;
      case RaplInterface::powercap:
        result = open_powercap_source(paths.sysfs, topology, wanted,
                                      read_cpu_identity(paths.procfs));
        break;
      case RaplInterface::msr:
      case RaplInterface::automatic:  // not in an order
        result = open_msr_source(paths, topology, wanted);
        break;
    }
    const bool ok = result.source != nullptr;
    results.push_back(std::move(result));
    if (ok) break;
  }
  return results;
}

}  // namespace rapl

std::unique_ptr<Collector> make_rapl_collector(const RaplCollectorConfig& config,
                                               const PathsConfig& paths, const Topology& topology) {
  if (!config.enabled) return nullptr;
  const rapl::DomainSet wanted = rapl::validate_rapl_config(config);
  auto probes = rapl::probe_interfaces(config.interface, paths, topology, wanted);
  return rapl::build_rapl_collector(std::move(probes), config, topology);
}

}  // namespace hwperf
