#include "collectors/registry.h"

#include "collectors/build_info.h"
#include "collectors/papi/papi_events.h"
#include "collectors/papi/papi_collector.h"
#include "collectors/rapl/rapl_collector.h"
#include "collectors/rapl/rapl_factory.h"
#include "collectors/topology_collector.h"

namespace hwperf {
namespace {

using Lines = std::vector<std::string>;

bool topology_enabled(const Config& config) { return config.collectors.topology.enabled; }
std::unique_ptr<Collector> make_topology(const Config&, const Topology& topology) {
  return make_topology_collector(topology);
}
// The topology itself is reported by the exporter, whether this collector is enabled or not.
Lines check_topology(const Config&, const Topology&) { return {}; }

bool papi_enabled(const Config& config) { return config.collectors.papi.enabled; }
std::unique_ptr<Collector> make_papi(const Config& config, const Topology& topology) {
  return make_papi_collector(config.collectors.papi, topology, config.paths);
}
Lines check_papi(const Config& config, const Topology& topology) {
  return papi_check_report(config.collectors.papi, topology, config.paths);
}
// One perf event, so one descriptor, per CPU and event (a derived preset may take more).
FileNeed papi_files(const Config& config, const Topology& topology) {
  const auto& papi = config.collectors.papi;
  const std::size_t cpus = papi::select_cpus(papi, topology).size();
  const std::size_t events = papi.events_given ? papi.events.size() : papi::default_events().size();
  return {"PAPI: " + std::to_string(cpus) + " CPUs x " + std::to_string(events) + " events",
          static_cast<unsigned long>(cpus * events)};
}

bool rapl_enabled(const Config& config) { return config.collectors.rapl.enabled; }
std::unique_ptr<Collector> make_rapl(const Config& config, const Topology& topology) {
  return make_rapl_collector(config.collectors.rapl, config.paths, topology);
}
// At most: five domains per package and die (perf, powercap, or one MSR device per package), and
// AMD's per-core energy events.
FileNeed rapl_files(const Config&, const Topology& topology) {
  const std::size_t count = 5 * topology.package_targets().size() + topology.core_targets().size();
  return {"RAPL: up to " + std::to_string(count) + " counters", static_cast<unsigned long>(count)};
}
Lines check_rapl(const Config& config, const Topology&) {
  rapl::validate_rapl_config(config.collectors.rapl);
  return {};
}

}  // namespace

const std::vector<CollectorEntry>& collector_registry() {
  static const std::vector<CollectorEntry> entries = {
      {"topology", &topology_enabled, &make_topology, &check_topology, nullptr, "hwloc_version",
       &hwloc_library_version},
      {"papi", &papi_enabled, &make_papi, &check_papi, &papi_files, "papi_version",
       &papi_library_version},
      {"rapl", &rapl_enabled, &make_rapl, &check_rapl, &rapl_files, nullptr, nullptr},
  };
  return entries;
}

std::vector<FileNeed> collector_file_needs(const Config& config, const Topology& topology) {
  std::vector<FileNeed> needs;
  for (const auto& entry : collector_registry()) {
    if (entry.enabled(config) && entry.files != nullptr) needs.push_back(entry.files(config, topology));
  }
  return needs;
}

CollectorSet build_collectors(const Config& config, const Topology& topology) {
  CollectorSet set;
  for (const auto& entry : collector_registry()) {
    if (entry.enabled(config)) set.add(entry.make(config, topology));
  }
  return set;
}

prometheus::MetricFamily registry_build_info() {
  std::vector<std::pair<std::string, std::string>> libraries;
  for (const auto& entry : collector_registry()) {
    if (entry.library_label != nullptr) {
      libraries.emplace_back(entry.library_label, entry.library_version());
    }
  }
  return build_info_family(libraries);
}

}  // namespace hwperf
