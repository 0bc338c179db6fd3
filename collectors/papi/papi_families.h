// What the PAPI collector exports, decided once at startup: its event families (which layout
// counters each series sums, with which labels and HELP) and its status families (availability,
// event info, dropped events, event-set shapes), which never change after startup.
#pragma once

#include <string>
#include <vector>

#include <prometheus/metric_family.h>

#include "collectors/events/emission.h"
#include "collectors/events/event_specs.h"
#include "collectors/papi/counter_source.h"
#include "config/config.h"
#include "topology/topology.h"

namespace hwperf::papi {

// One event's family: each series sums layout counters (its slots index SourceLayout::counters).
struct EventFamily {
  std::string name;
  std::string help;
  events::Unit unit = events::Unit::count;
  std::vector<events::CounterSeries> series;
};

// The families of every event the layout counts somewhere, at config.granularity. An event
// counted nowhere exports no family: an empty family would suggest a series that can never
// exist (hwperf_papi_event_dropped says why). Throws std::invalid_argument when the layout names
// an event or CPU it was not given.
std::vector<EventFamily> event_families(const PapiCollectorConfig& config,
                                        const std::vector<events::EventSpec>& events,
                                        const Topology& topology, const SourceLayout& layout);

// hwperf_papi_available{reason}: built for every PAPI collector, counting or not.
prometheus::MetricFamily availability_family(const std::string& reason);

// Availability ("ok"), event info, dropped events and event-set shapes.
std::vector<prometheus::MetricFamily> status_families(const std::vector<events::EventSpec>& events,
                                                      const SourceLayout& layout);

}  // namespace hwperf::papi
