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
#include "collectors/papi/papi_collector.h"
#include "collectors/papi/papi_config.h"
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
// exist (hwperf_papi_event_dropped says why). Events of one family name share it, with one HELP
// (the first's): a group's member has a `group` label, group_of[e], beside its topology labels
// ("" for an ungrouped event), so the same event grouped and ungrouped, or in two groups, is one
// family of several series. An ExportedEvent with no `event` (a group's times) is described by its
// `description` alone. Throws std::invalid_argument when the layout names an event or CPU it
// was not given.
std::vector<EventFamily> event_families(const PapiCollectorConfig& config,
                                        const std::vector<events::ExportedEvent>& events,
                                        const std::vector<std::string>& group_of,
                                        const Topology& topology, const SourceLayout& layout);

// hwperf_papi_available{reason}: built for every PAPI collector, counting or not.
prometheus::MetricFamily availability_family(const std::string& reason);

// Availability ("ok"), event info (of the first `configured` events: those not in a group),
// dropped events, dropped default groups and event-set shapes.
std::vector<prometheus::MetricFamily> status_families(
    const std::vector<events::ExportedEvent>& events, std::size_t configured,
    const SourceLayout& layout, const std::vector<DroppedGroup>& dropped_groups = {});

}  // namespace hwperf::papi
