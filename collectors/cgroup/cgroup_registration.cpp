#include "collectors/cgroup/cgroup_registration.h"

#include "collectors/cgroup/cgroup_factory.h"

namespace hwperf {
namespace {

bool enabled(const Config& config) { return config.collectors.cgroup.enabled; }
std::unique_ptr<Collector> make(const Config& config, const Topology& topology,
                                const CollectorServices& services) {
  return cgroup::make_cgroup_collector(config, topology, services.presets);
}
std::vector<std::string> check(const Config& config, const Topology& topology,
                               const CollectorServices& services) {
  // Building it finds the hierarchy and probes a cgroup event, which is what --check-config is for.
  auto collector = cgroup::make_cgroup_collector(config, topology, services.presets);
  if (!collector->unavailable().empty()) {
    return {"NOT available: " + collector->unavailable() + " (the exporter serves without it)"};
  }
  auto lines = cgroup::cgroup_check_report(config, topology);
  for (const auto& event : collector->events()) {
    lines.push_back("event " + event.event + " -> " + event.family);
  }
  return lines;
}
FileNeed files(const Config& config, const Topology& topology) {
  return cgroup::cgroup_file_need(config, topology);
}

}  // namespace

const CollectorEntry& cgroup_collector_entry() {
  static const CollectorEntry entry = {"cgroup", &enabled, &make, &check, &files, nullptr, nullptr};
  return entry;
}

}  // namespace hwperf
