// How every counting collector turns its counts into samples: which counters a series sums at a
// topology level and with which labels (decided once, at startup), and the one place an event's
// count becomes a sample (seconds for nanosecond events).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <prometheus/metric_family.h>

#include "collectors/events/specs.h"
#include "collectors/events/vocabulary.h"
#include "collectors/metrics.h"
#include "collectors/prepared_family.h"
#include "topology/topology.h"

namespace hwperf::events {

// A CPU's labels at a level: cpu (with its core, package and numa_node, empty where the machine
// reports no NUMA node, which Prometheus treats as absent), core (core and package: a core id is
// unique only within its package), package, machine (none).
Labels level_labels(Granularity level, const HardwareThread& thread);

// One exported series: its labels and the slots whose counts it sums.
struct CounterSeries {
  Labels labels;
  std::vector<std::size_t> slots;
};

// Slot i counts on threads[i]; the slots grouped into one series per CPU, core, package or the
// machine, in the order of their numbers (package, core, cpu), so the exposition is stable from
// scrape to scrape.
std::vector<CounterSeries> series_at_level(Granularity level,
                                           const std::vector<HardwareThread>& threads);

prometheus::MetricFamily counter_family(const std::string& name, const std::string& help);

// The one place an event's count becomes a sample's value: a nanosecond event is exported in
// seconds.
double sample_value(std::uint64_t count, Unit unit);
void add_count(prometheus::MetricFamily& family, const Labels& labels, std::uint64_t count,
               Unit unit);

// One sample per series: `leading` labels, then the series' own, valued at the sum of
// values[first + slot] over its slots.
void add_series(prometheus::MetricFamily& family, const std::vector<CounterSeries>& series,
                const std::vector<std::uint64_t>& values, std::size_t first, Unit unit,
                const Labels& leading = {});
// The same samples written through a prepared family (collectors/prepared_family.h) whose series
// at, at + 1, ... are those add_series would add, in its order; returns the series after them.
std::size_t write_series(PreparedFamily::Writer& writer, std::size_t at,
                         const std::vector<CounterSeries>& series,
                         const std::vector<std::uint64_t>& values, std::size_t first, Unit unit);

}  // namespace hwperf::events
