#include "collectors/rapl/rapl_registration.h"

#include "collectors/rapl/rapl_config.h"

#include "collectors/rapl/rapl_factory.h"

namespace hwperf {
namespace {

bool rapl_enabled(const Config& config) { return config.get<RaplCollectorConfig>().enabled; }
std::unique_ptr<Collector> rapl_make(const Config& config, const Topology& topology,
                                     const CollectorServices&) {
  return make_rapl_collector(config.get<RaplCollectorConfig>(), config.paths, topology);
}
// What RAPL finds is logged when the collector is built; its settings were checked on loading.
std::vector<std::string> rapl_check(const Config&, const Topology&, const CollectorServices&) {
  return {};
}
// At most: five domains per package and die (perf, powercap, or one MSR device per package), and
// AMD's per-core energy events.
FileNeed rapl_files(const Config&, const Topology& topology) {
  const std::size_t count = 5 * topology.package_targets().size() + topology.core_targets().size();
  return {"RAPL: up to " + std::to_string(count) + " counters", static_cast<unsigned long>(count)};
}

}  // namespace

CollectorEntry rapl_collector_entry() {
  return CollectorEntry("rapl", &rapl_settings_keys, &rapl_enabled, &rapl_make, &rapl_check)
      .with_files(&rapl_files)
      .counts_system_wide();
}

}  // namespace hwperf
