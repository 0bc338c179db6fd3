#include "collectors/papi/papi_registration.h"

#include "collectors/papi/papi_events.h"
#include "collectors/papi/papi_factory.h"
#include "collectors/papi/papi_library.h"

namespace hwperf {
namespace {

bool enabled(const Config& config) { return config.collectors.papi.enabled; }
std::unique_ptr<Collector> make(const Config& config, const Topology& topology) {
  return make_papi_collector(config.collectors.papi, topology, config.paths);
}
std::vector<std::string> check(const Config& config, const Topology& topology) {
  return papi_check_report(config.collectors.papi, topology, config.paths);
}
// One perf event, so one descriptor, per CPU and event (a derived preset may take more).
FileNeed files(const Config& config, const Topology& topology) {
  const auto& papi = config.collectors.papi;
  const std::size_t cpus = papi::select_cpus(papi, topology).size();
  const std::size_t events = papi.events_given ? papi.events.size() : papi::default_events().size();
  return {"PAPI: " + std::to_string(cpus) + " CPUs x " + std::to_string(events) + " events",
          static_cast<unsigned long>(cpus * events)};
}

}  // namespace

const CollectorEntry& papi_collector_entry() {
  static const CollectorEntry entry = {"papi",  &enabled,       &make, &check, &files,
                                       "papi_version", &papi_library_version};
  return entry;
}

}  // namespace hwperf
