#include "collectors/topology/topology_registration.h"

#include "collectors/topology/topology_config.h"

#include "collectors/topology/topology_collector.h"

namespace hwperf {
namespace {

bool topology_enabled(const Config& config) {
  return config.get<TopologyCollectorConfig>().enabled;
}
std::unique_ptr<Collector> topology_make(const Config&, const Topology& topology,
                                         const CollectorServices&) {
  return make_topology_collector(topology);
}
// The topology itself is reported by the exporter, whether this collector is enabled or not.
std::vector<std::string> topology_check(const Config&, const Topology&, const CollectorServices&) {
  return {};
}
// Every family is constant, built from the topology alone: its names are those of the collector.
std::vector<FamilyDeclaration> topology_families(const Config&, const Topology& topology) {
  return exported_families(*make_topology_collector(topology));
}

}  // namespace

CollectorEntry topology_collector_entry() {
  return CollectorEntry("topology", &topology_settings_keys, &topology_enabled, &topology_make,
                        &topology_check)
      .with_library("hwloc_version", &hwloc_library_version)
      .with_families(&topology_families);
}

}  // namespace hwperf
