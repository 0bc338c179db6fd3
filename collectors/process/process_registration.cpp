#include "collectors/process/process_registration.h"

#include "collectors/process/process_factory.h"

namespace hwperf {
namespace {

// Built only when targets are configured: with none it would count nothing.
bool enabled(const Config& config) {
  return config.collectors.process.enabled && !config.collectors.process.targets.empty();
}
std::unique_ptr<Collector> make(const Config& config, const Topology& topology,
                                const CollectorServices& services) {
  return process::make_process_collector(config, topology, services.presets);
}
std::vector<std::string> check(const Config& config, const Topology& topology,
                               const CollectorServices& services) {
  // Building it probes every event and pidfile, which is what --check-config is for.
  auto collector = process::make_process_collector(config, topology, services.presets);
  auto lines = process::process_check_report(config, topology);
  for (const auto& event : collector->events()) {
    lines.push_back("event " + event.event + " -> " + event.family);
  }
  return lines;
}
FileNeed files(const Config& config, const Topology& topology) {
  return process::process_file_need(config, topology);
}

}  // namespace

const CollectorEntry& process_collector_entry() {
  static const CollectorEntry entry = {"process", &enabled, &make,  &check,
                                       &files,    nullptr,  nullptr};
  return entry;
}

}  // namespace hwperf
