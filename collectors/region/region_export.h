// Region counts as the process targets export them: the segments of each target's processes
// (segment_source.h), read at each scrape (region_segment_reader.h), summed per region (and CPU
// with per_cpu) into hwperf_region_* families whose names come from the events the exporter
// configured, never from the segment.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <prometheus/metric_family.h>

#include "collectors/events/vocabulary.h"
#include "collectors/perf/counted_events.h"
#include "collectors/region/region_segment_reader.h"
#include "collectors/region/segment_source.h"
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

// Each distinct encoding of `counted` once, named at the "region" level. Throws
// std::invalid_argument for a name that cannot be made (the process families were made from the
// same metrics, so this does not happen for a configuration that started).
std::vector<RegionEvent> region_events(const std::vector<perf::CountedEvent>& counted);

// The event table the exporter writes into a segment it creates: the first
// HWPERF_REGION_MAX_EVENTS of `events`; `left_out` gets the names of the others.
std::vector<hwperf_region_event> segment_event_table(const std::vector<RegionEvent>& events,
                                                     std::vector<std::string>& left_out);

// A process whose segment is read: its pid and start time (pids are reused).
using ProcessKey = std::pair<pid_t, std::uint64_t>;

// One segment's last read, as a scrape sees it.
struct SegmentReading {
  pid_t pid = 0;
  Problem problem = Problem::none;
  std::string reason;
  Snapshot snapshot;  // when problem == none
  // Per event of the snapshot, the RegionEvent it is exported as; nullopt: not one the exporter
  // counts (skipped, and logged once per segment).
  std::vector<std::optional<std::size_t>> matched;
  std::uint64_t torn = 0;       // slot reads skipped so far: kept changing
  std::uint64_t backwards = 0;  // slot reads refused so far: counts went backwards
};

// The segments of one target. `update` runs in the background rescan, `read` in scrapes.
class TargetRegions {
 public:
  // `own_fd`: the memfd the exporter created for the target's command (mapped once, kept for
  // the target's life, so the final counts outlive the command); -1 for discovered segments.
  TargetRegions(std::string target, std::string procfs, const std::vector<RegionEvent>& events,
                int own_fd);

  // The processes the target counts now: a segment is looked for in each one that has none yet
  // (every rescan: the library creates it at the first region), and dropped once its process is
  // no longer counted.
  void update(const std::vector<ProcessKey>& processes);
  std::vector<SegmentReading> read();
  // The segment is the command's own (-- CMD): per-thread families are worth their series.
  bool own() const { return own_.has_value(); }

 private:
  struct Segment {
    pid_t pid = 0;
    std::optional<OpenedSegment> opened;
    SegmentReader reader;
    Problem problem = Problem::none;
    std::string reason;
    std::uint64_t torn = 0;
    std::set<std::string> logged;  // notes already logged
  };
  void log_change(Segment& segment, Problem problem, const std::string& reason);

  SegmentReading read_one(Segment& segment);

  std::string target_;
  std::string procfs_;
  const std::vector<RegionEvent>& events_;
  std::mutex mutex_;
  std::optional<Segment> own_;
  std::map<ProcessKey, Segment> found_;
};

// Builds the hwperf_region_* families of one scrape. `cpus`: with per_cpu, the machine's CPUs
// (a slot's CPU gets that CPU's topology labels; a CPU not among them is left out); empty: one
// series per region. `per_thread`: also hwperf_region_thread_*{target, region, tid}, the
// per-thread table of the --once summary, for the segment of a command (whose threads are
// bounded by its slots) only.
class RegionFamilies {
 public:
  RegionFamilies(const std::vector<RegionEvent>& events, const std::vector<HardwareThread>& cpus);
  void add(const std::string& target, const std::vector<SegmentReading>& readings, bool per_thread);
  void append_to(std::vector<prometheus::MetricFamily>& out);

 private:
  const std::vector<RegionEvent>& events_;
  const std::vector<HardwareThread>& cpus_;
  prometheus::MetricFamily calls_, seconds_, valid_, segments_, skipped_, dropped_;
  prometheus::MetricFamily thread_calls_, thread_seconds_;
  std::vector<prometheus::MetricFamily> counts_, thread_counts_;  // per RegionEvent
};

}  // namespace hwperf::region
