#include "collectors/papi/papi_registration.h"

#include "collectors/papi/papi_config.h"

#include "collectors/events/event_specs.h"
#include "collectors/events/groups.h"
#include "collectors/papi/papi_factory.h"
#include "collectors/papi/papi_library.h"

namespace hwperf {
namespace {

bool papi_enabled(const Config& config) { return config.get<PapiCollectorConfig>().enabled; }
std::unique_ptr<Collector> papi_make(const Config& config, const Topology& topology,
                                     const CollectorServices&) {
  return make_papi_collector(config.get<PapiCollectorConfig>(), topology, config.paths,
                             config.get<GroupsConfig>().groups);
}
std::vector<std::string> papi_check(const Config& config, const Topology& topology,
                                    const CollectorServices&) {
  return papi_check_report(config.get<PapiCollectorConfig>(), topology, config.paths,
                           config.get<GroupsConfig>().groups);
}
FileNeed papi_files(const Config& config, const Topology& topology) {
  return papi_file_need(config.get<PapiCollectorConfig>(), topology, config.paths,
                        config.get<GroupsConfig>().groups);
}
std::vector<events::GroupDefinition> papi_groups(const Config& config) {
  return papi::configured_groups(config.get<PapiCollectorConfig>(),
                                 config.get<GroupsConfig>().groups);
}

// Per-CPU families are summed in rules at the collector's level and every coarser one.
std::vector<events::RuleScope> papi_rule_scopes(const Config& config) {
  const auto& papi = config.get<PapiCollectorConfig>();
  events::RuleScope scope;
  scope.family_level = events::family_level(papi.granularity);
  const events::RuleLevel cpu{"instance_cpu", {"cpu", "core", "package", "numa_node"}};
  const events::RuleLevel core{"instance_package_core", {"package", "core"}};
  const events::RuleLevel package{"instance_package", {"package"}};
  const events::RuleLevel machine{"instance", {}};
  switch (papi.granularity) {
    case Granularity::cpu: scope.levels = {cpu, core, package, machine}; break;
    case Granularity::core: scope.levels = {core, package, machine}; break;
    case Granularity::package: scope.levels = {package, machine}; break;
    case Granularity::machine: scope.levels = {machine}; break;
  }
  scope.groups = papi_groups(config);
  return {scope};
}

// The event families at the configured granularity; PAPI is not asked. Its status families
// (hwperf_papi_*) are left out: no event family can take a name of that prefix.
std::vector<FamilyDeclaration> papi_families(const Config& config, const Topology&) {
  const auto& papi = config.get<PapiCollectorConfig>();
  const std::vector<EventSpec> events = papi::ungrouped_events(papi);
  return configured_families(events, papi_groups(config), events::family_level(papi.granularity));
}

}  // namespace

CollectorEntry papi_collector_entry() {
  return CollectorEntry("papi", &papi_settings_keys, &papi_enabled, &papi_make, &papi_check)
      .with_files(&papi_files)
      .with_library("papi_version", &papi_library_version)
      .with_rule_scopes(&papi_rule_scopes)
      .with_families(&papi_families)
      .counts_system_wide();
}

}  // namespace hwperf
