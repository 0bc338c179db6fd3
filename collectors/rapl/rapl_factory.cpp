// From configuration to a running RAPL collector: validate, probe the interfaces in order, and
// hand the first that works to the collector.
#include "collectors/rapl/rapl_factory.h"

#include <cmath>
#include <cstdio>

#include "collectors/rapl/msr_source.h"
#include "collectors/rapl/perf_source.h"
#include "collectors/rapl/powercap_source.h"
#include "common/text.h"
#include "config/errors.h"

namespace hwperf {
namespace rapl {
DomainSet wanted_domains(const RaplCollectorConfig& config) {
  DomainSet wanted = config.domains.empty() ? DomainSet::all() : DomainSet::none();
  for (RaplDomain domain : config.domains) wanted.insert(domain);
  return wanted;
}

std::vector<RaplInterface> interface_order(RaplInterface choice) {
  if (choice != RaplInterface::automatic) return {choice};
  // perf: 64-bit kernel counts, kernel-maintained units; powercap: kernel units but
  // 32-bit-range values; msr: raw device access and our own model quirks. See
  // docs/collectors/rapl.md, "Interfaces, and the order auto tries them".
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
        result = open_powercap_source(paths.sysfs, topology, wanted, topology.cpu_identity());
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
  const rapl::DomainSet wanted = rapl::wanted_domains(config);
  auto probes = rapl::probe_interfaces(config.interface, paths, topology, wanted);
  return rapl::build_rapl_collector(std::move(probes), config, topology);
}

}  // namespace hwperf
