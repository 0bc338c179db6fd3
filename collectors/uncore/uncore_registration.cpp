#include "collectors/uncore/uncore_registration.h"

#include "collectors/uncore/uncore_config.h"

#include "collectors/uncore/counter_backend.h"
#include "collectors/uncore/resctrl.h"
#include "collectors/uncore/uncore_collector.h"
#include "collectors/uncore/uncore_plan.h"

namespace hwperf {
namespace {

bool uncore_enabled(const Config& config) { return config.get<UncoreCollectorConfig>().enabled; }
std::unique_ptr<Collector> uncore_make(const Config& config, const Topology& topology,
                                       const CollectorServices&) {
  const std::string& sysfs = config.paths.sysfs;
  return uncore::make_uncore_collector(
      uncore::plan_uncore(sysfs, topology), uncore::make_perf_backend(), config.paths.procfs,
      uncore::open_resctrl(sysfs, uncore::l3_packages(sysfs, topology)),
      config.get<UncoreCollectorConfig>().peak_memory_bytes_per_second);
}
// What sysfs describes, per quantity and package: the dry run opens no perf counter (the
// resctrl files it looks at are plain reads).
std::vector<std::string> uncore_check(const Config& config, const Topology& topology,
                                      const CollectorServices&) {
  auto lines = uncore::describe_plan(uncore::plan_uncore(config.paths.sysfs, topology));
  const auto resctrl =
      uncore::open_resctrl(config.paths.sysfs, uncore::l3_packages(config.paths.sysfs, topology));
  lines.push_back(resctrl.reason == "ok"
                      ? "resctrl: " + std::to_string(resctrl.counters.size()) + " counter file(s)"
                      : "resctrl: not counted (" + resctrl.reason + "): " + resctrl.detail);
  return lines;
}
// Perf counters and the resctrl files held open (those are opened here and closed again).
FileNeed uncore_files(const Config& config, const Topology& topology) {
  const std::string& sysfs = config.paths.sysfs;
  const auto count =
      uncore::plan_uncore(sysfs, topology).counters.size() +
      uncore::open_resctrl(sysfs, uncore::l3_packages(sysfs, topology)).counters.size();
  return {"uncore: " + std::to_string(count) + " counters", static_cast<unsigned long>(count)};
}

}  // namespace

CollectorEntry uncore_collector_entry() {
  // Its PMUs count the whole package and the msr PMU every CPU: system-wide privileges.
  return CollectorEntry("uncore", &uncore_settings_keys, &uncore_enabled, &uncore_make,
                        &uncore_check)
      .with_files(&uncore_files)
      .counts_system_wide();
}

}  // namespace hwperf
