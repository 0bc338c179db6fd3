// Region counts as the process targets export them: the segments of each target's processes
// (target_regions.h), read at each scrape (region_segment_reader.h), summed per region (and CPU
// with per_cpu) into hwperf_region_* families whose names come from the events the exporter
// configured, never from the segment.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <prometheus/metric_family.h>

#include "collectors/events/vocabulary.h"
#include "collectors/perf/counted_events.h"
#include "collectors/region/region_segment_reader.h"
#include "collectors/region/target_regions.h"
#include "markers/include/hwperf/region_segment.h"
#include "topology/topology.h"

namespace hwperf::region {

// An event the exporter counts, as regions export it: matched to a segment's events by perf type
// and configs, exported as hwperf_region_<metric>_total with the process families' metric.
struct RegionEvent {
  perf::EventEncoding encoding;
  std::string family;
  std::string thread_family;  // hwperf_region_thread_<metric>_total: per thread, for -- CMD
  std::string event;          // as configured, for HELP and the log
  events::Unit unit = events::Unit::count;
};

// Whether a segment's event is `encoding`: the same perf type and configs.
bool same_event(const perf::EventEncoding& encoding, const SegmentEvent& event);

// Each distinct encoding of `counted` once, named at the "region" level. Throws
// std::invalid_argument for a name that cannot be made (the process families were made from the
// same metrics, so this does not happen for a configuration that started).
std::vector<RegionEvent> region_events(const std::vector<perf::CountedEvent>& counted);

// The event table the exporter writes into a segment it creates: the first
// HWPERF_REGION_MAX_EVENTS of `events`; `left_out` gets the names of the others.
std::vector<hwperf_region_event> segment_event_table(const std::vector<RegionEvent>& events,
                                                     std::vector<std::string>& left_out);

// (Region, thread) pairs of one target exported per thread; the other slots are summed into
// tid="other" of their region and counted in hwperf_region_thread_slots_folded. A program may
// fill its 4096 slots with made-up threads: 4096 pairs were 26,000 series and a 4.3 MB body per
// scrape (bench/README.md).
inline constexpr std::size_t kMaxThreadPairs = 512;

// Builds the hwperf_region_* families of one scrape. `cpus`: with per_cpu, the machine's CPUs
// (a slot's CPU gets that CPU's topology labels; a CPU not among them is left out); empty: one
// series per region. `per_thread`: also hwperf_region_thread_*{target, region, tid}, the
// per-thread table of the --once summary, for the segment of a command only, and for its first
// kMaxThreadPairs (region, thread) pairs in slot order (the order the program made them, the
// same at every scrape). Sums saturate at 2^64 - 1: a region's series never goes backwards while
// its slots do not (each slot is kept from going backwards by SegmentReader).
class RegionFamilies {
 public:
  RegionFamilies(const std::vector<RegionEvent>& events, const std::vector<HardwareThread>& cpus);
  void add(const std::string& target, const std::vector<SegmentReading>& readings, bool per_thread);
  void append_to(std::vector<prometheus::MetricFamily>& out);

 private:
  struct Sum;
  int series_cpu(std::int32_t cpu) const;
  void add_segment_series(const std::string& target, const SegmentReading& reading);
  void add_region_series(const std::string& target, std::string_view region, int cpu,
                         const Sum& sum);
  void add_thread_series(const std::string& target, std::string_view region, const std::string& tid,
                         const Sum& sum);

  const std::vector<RegionEvent>& events_;
  const std::vector<HardwareThread>& cpus_;
  prometheus::MetricFamily calls_, seconds_, valid_, segments_, skipped_, dropped_;
  prometheus::MetricFamily thread_calls_, thread_seconds_, folded_;
  std::vector<prometheus::MetricFamily> counts_, thread_counts_;  // per RegionEvent
};

}  // namespace hwperf::region
