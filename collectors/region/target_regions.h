// The segments of one process target: found by the background rescan (segment_discovery.h),
// read at each scrape (region_segment_reader.h). A segment is the measured program's memory, so
// a scrape reads it holding no lock another scrape or the rescan needs: one read of a segment at
// a time, without a lock, whose result every scrape that asked meanwhile shares; the merge with
// what was read before and the publication take a short lock of that segment only.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "collectors/region/region_segment_reader.h"
#include "collectors/region/segment_discovery.h"
#include "collectors/region/segment_source.h"

namespace hwperf::region {

struct RegionEvent;

// One segment's last read, as a scrape sees it.
struct SegmentReading {
  pid_t pid = 0;
  Problem problem = Problem::none;
  std::string reason;
  std::shared_ptr<const Snapshot> snapshot;  // when problem == none: shared, never copied
  // Per event of the snapshot, the RegionEvent it is exported as; nullopt: not one the exporter
  // counts (skipped, and logged once per segment).
  std::vector<std::optional<std::size_t>> matched;
  std::uint64_t torn = 0;       // slot reads skipped so far: kept changing
  std::uint64_t unread = 0;     // slot reads skipped so far: the read's budget was spent
  std::uint64_t backwards = 0;  // slot reads refused so far: counts went backwards
};

// A problem that comes and goes is logged at most kProblemLogBurst times a minute per segment;
// the changes left out are counted in the next line (the metric always has the current reason).
inline constexpr unsigned kProblemLogBurst = 4;
inline constexpr std::chrono::seconds kProblemLogWindow{60};

struct TargetRegionsOptions {
  ReadLimits read;
  DiscoveryLimits discovery;
  std::optional<int> shm_mount;  // shared_memory_mount_id() of the procfs
};

class TargetRegions {
 public:
  // `own_fd`: the memfd the exporter created for the target's command (mapped once, kept for
  // the target's life, so the final counts outlive the command); -1 for discovered segments.
  TargetRegions(std::string target, std::string procfs, const std::vector<RegionEvent>& events,
                int own_fd, TargetRegionsOptions options);
  ~TargetRegions();

  // The processes the target counts now (background rescan): a segment is looked for in those
  // that have none, within SegmentDiscovery's limits, and dropped once its process is no longer
  // counted. Scrapes go on reading meanwhile.
  void update(const std::vector<ProcessKey>& processes);
  std::vector<SegmentReading> read();
  // The segment is the command's own (-- CMD): per-thread families are worth their series.
  bool own() const { return own_ != nullptr; }

 private:
  struct Segment;
  SegmentReading read_one(Segment& segment);
  void publish(Segment& segment, ReadResult fresh);
  void log_state(Segment& segment, Problem problem, const std::string& reason);
  void log_notes(Segment& segment, const std::vector<std::string>& notes);
  std::shared_ptr<Segment> make_segment(pid_t pid, SegmentOpening opening);

  std::string target_;
  const std::vector<RegionEvent>& events_;
  ReadLimits read_limits_;
  mutable std::mutex mutex_;  // own_ and found_: held to copy or swap them, never to read
  std::shared_ptr<Segment> own_;
  std::map<ProcessKey, std::shared_ptr<Segment>> found_;
  std::mutex discovery_mutex_;  // one update at a time
  SegmentDiscovery discovery_;
};

}  // namespace hwperf::region
