// The process collector configured for the region tests: two software events, one target.
#pragma once

#include <string>
#include <utility>

#include "collectors/events/vocabulary.h"
#include "config/config.h"

namespace hwperf::test {

inline const char* const kEvents[] = {"perf::TASK-CLOCK", "perf::PAGE-FAULTS"};

inline Config region_config(ProcessTargetConfig target, bool regions, bool per_cpu) {
  Config config;
  config.get<ProcessCollectorConfig>().events_given = true;
  for (const char* name : kEvents) {
    EventSpec event;
    event.event = name;
    config.get<ProcessCollectorConfig>().events.push_back(event);
  }
  config.get<ProcessCollectorConfig>().regions = regions;
  config.get<ProcessCollectorConfig>().per_cpu = per_cpu;
  config.get<ProcessCollectorConfig>().targets.push_back(std::move(target));
  return config;
}

// A pid no process has: the target counts nothing, so only its segment is read.
inline ProcessTargetConfig command_target(int fd) {
  ProcessTargetConfig target;
  target.name = "app";
  target.selector = ProcessTargetConfig::Selector::pid;
  target.pid = 0x3fffffff;
  target.regions_fd = fd;
  return target;
}

inline std::string region_family(const char* event) {
  return "hwperf_region_" + events::default_metric_base(event) + "_total";
}

}  // namespace hwperf::test
