#include "collectors/papi/papi_registration.h"

#include "collectors/events/event_specs.h"
#include "collectors/papi/papi_factory.h"
#include "collectors/papi/papi_library.h"

namespace hwperf {
namespace {

bool enabled(const Config& config) { return config.collectors.papi.enabled; }
std::unique_ptr<Collector> make(const Config& config, const Topology& topology,
                                const CollectorServices&) {
  return make_papi_collector(config.collectors.papi, topology, config.paths);
}
std::vector<std::string> check(const Config& config, const Topology& topology,
                               const CollectorServices&) {
  return papi_check_report(config.collectors.papi, topology, config.paths);
}
FileNeed files(const Config& config, const Topology& topology) {
  return papi_file_need(config.collectors.papi, topology, config.paths);
}
// The event families at the configured granularity; PAPI is not asked. Its status families
// (hwperf_papi_*) are left out: no event family can take a name of that prefix.
std::vector<FamilyDeclaration> families(const Config& config, const Topology&) {
  return configured_families(config.collectors.papi, &papi::default_events,
                             events::family_level(config.collectors.papi.granularity));
}

}  // namespace

const CollectorEntry& papi_collector_entry() {
  static const CollectorEntry entry = {
      "papi", &enabled, &make, &check, &files, "papi_version", &papi_library_version, &families};
  return entry;
}

}  // namespace hwperf
