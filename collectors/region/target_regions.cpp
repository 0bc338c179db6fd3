#include "collectors/region/target_regions.h"

#include <utility>

#include "collectors/region/region_export.h"
#include "common/log.h"

namespace hwperf::region {
namespace {

// A note is logged once per segment; a scribbling program could invent new ones forever.
constexpr std::size_t kMaxLoggedNotes = 64;

}  // namespace

struct TargetRegions::Segment {
  pid_t pid = 0;
  std::optional<OpenedSegment> opened;  // fixed once made: read without a lock
  std::mutex mutex;                     // everything below; never held while reading the mapping
  std::condition_variable read_done;
  bool reading = false;          // a scrape is reading the mapping; the others wait for its result
  std::uint64_t generation = 0;  // reads published
  SegmentReader reader;
  SegmentReading published;
  std::uint64_t torn = 0, unread = 0;
  // The log: the problem last logged (none at first: only a problem or a recovery is news).
  Problem logged = Problem::none;
  std::chrono::steady_clock::time_point window_start{};
  unsigned logged_in_window = 0;
  unsigned changes_not_logged = 0;
  std::set<std::string> notes_logged;
};

TargetRegions::TargetRegions(std::string target, std::string procfs,
                             const std::vector<RegionEvent>& events, int own_fd,
                             TargetRegionsOptions options)
    : target_(std::move(target)),
      events_(events),
      read_limits_(options.read),
      discovery_(std::move(procfs), options.shm_mount, options.discovery) {
  if (own_fd >= 0) own_ = make_segment(0, map_own_segment(own_fd));
}

TargetRegions::~TargetRegions() = default;

std::shared_ptr<TargetRegions::Segment> TargetRegions::make_segment(pid_t pid,
                                                                    SegmentOpening opening) {
  auto segment = std::make_shared<Segment>();
  segment->pid = pid;
  segment->opened = std::move(opening.segment);
  segment->published.pid = pid;
  std::lock_guard lock(segment->mutex);
  log_state(*segment, opening.problem, opening.reason);
  return segment;
}

void TargetRegions::log_state(Segment& segment, Problem problem, const std::string& reason) {
  segment.published.problem = problem;
  segment.published.reason = reason;
  const auto now = std::chrono::steady_clock::now();
  if (now - segment.window_start >= kProblemLogWindow) {
    segment.window_start = now;
    segment.logged_in_window = 0;
  }
  if (problem == segment.logged) return;
  if (segment.logged_in_window >= kProblemLogBurst) {
    ++segment.changes_not_logged;
    return;
  }
  ++segment.logged_in_window;
  segment.logged = problem;
  std::string text = "process target " + target_ + ": region segment" +
                     (segment.pid > 0 ? " of pid " + std::to_string(segment.pid) : "") + ": ";
  if (segment.changes_not_logged > 0) {
    text += "(" + std::to_string(segment.changes_not_logged) + " changes not logged) ";
    segment.changes_not_logged = 0;
  }
  if (problem == Problem::none) {
    log::info(text + "valid");
  } else {
    log::warn(text + to_string(problem) + ": " + reason +
              "; its regions are not exported until it reads valid again");
  }
}

void TargetRegions::log_notes(Segment& segment, const std::vector<std::string>& notes) {
  for (const auto& note : notes) {
    if (segment.notes_logged.size() >= kMaxLoggedNotes ||
        !segment.notes_logged.insert(note).second) {
      continue;
    }
    log::warn("process target " + target_ + ": region segment" +
              (segment.pid > 0 ? " of pid " + std::to_string(segment.pid) : "") + ": " + note);
  }
}

void TargetRegions::update(const std::vector<ProcessKey>& processes) {
  std::lock_guard one_at_a_time(discovery_mutex_);
  std::map<ProcessKey, std::shared_ptr<Segment>> kept;
  std::vector<ProcessKey> looking;
  {
    std::lock_guard lock(mutex_);
    for (const auto& key : processes) {
      const auto it = found_.find(key);
      if (it != found_.end()) {
        kept.emplace(key, it->second);
      } else {
        looking.push_back(key);
      }
    }
  }
  // Outside the lock: scrapes go on reading what is mapped while /proc is looked at.
  for (auto& [key, opening] : discovery_.update(looking)) {
    kept.emplace(key, make_segment(key.first, std::move(opening)));
  }
  std::lock_guard lock(mutex_);
  found_.swap(kept);
  // `kept` now holds the dropped segments: unmapped here, or by the last scrape reading one.
}

void TargetRegions::publish(Segment& segment, ReadResult fresh) {
  ReadResult result = segment.reader.merge(std::move(fresh));
  log_state(segment, result.problem, result.reason);
  SegmentReading& reading = segment.published;
  reading.matched.clear();
  if (!result.ok()) {
    reading.snapshot = nullptr;
    return;
  }
  reading.snapshot = segment.reader.last();
  const Snapshot& snapshot = *reading.snapshot;
  segment.torn += snapshot.torn_slots;
  segment.unread += snapshot.unread_slots;
  reading.torn = segment.torn;
  reading.unread = segment.unread;
  reading.backwards = segment.reader.backwards();
  std::vector<std::string> notes = result.snapshot.notes;
  for (std::size_t e = 0; e < snapshot.events.size(); ++e) {
    const auto& event = snapshot.events[e];
    std::optional<std::size_t> match;
    for (std::size_t i = 0; i < events_.size() && !match; ++i) {
      if (same_event(events_[i].encoding, event)) match = i;
    }
    if (!match) {
      notes.push_back("event " + std::to_string(e) + " (\"" + event.name + "\", perf type " +
                      std::to_string(event.type) + " config " + std::to_string(event.config) +
                      ") is not one this exporter counts: skipped");
    }
    reading.matched.push_back(match);
  }
  log_notes(segment, notes);
}

SegmentReading TargetRegions::read_one(Segment& segment) {
  std::unique_lock lock(segment.mutex);
  if (!segment.opened) return segment.published;
  if (segment.reading) {
    // Another scrape is reading it now: its result is as fresh as ours would be.
    const std::uint64_t generation = segment.generation;
    segment.read_done.wait(lock, [&] { return segment.generation != generation; });
    return segment.published;
  }
  segment.reading = true;
  const std::uint32_t first_slot = segment.reader.next_slot();
  // However this read ends, the scrapes waiting for it are woken (before `lock` goes).
  struct Done {
    Segment& segment;
    std::unique_lock<std::mutex>& lock;
    ~Done() {
      if (!lock.owns_lock()) lock.lock();
      segment.reading = false;
      ++segment.generation;
      segment.read_done.notify_all();
    }
  } done{segment, lock};
  lock.unlock();
  // No lock held: the program may keep slots busy, and the read's limits bound what that costs.
  const auto& mapping = segment.opened->mapping;
  ReadResult fresh = read_segment(mapping.data(), mapping.size(), read_limits_, first_slot);
  lock.lock();
  publish(segment, std::move(fresh));
  return segment.published;
}

std::vector<SegmentReading> TargetRegions::read() {
  std::vector<std::shared_ptr<Segment>> segments;
  {
    std::lock_guard lock(mutex_);
    if (own_) segments.push_back(own_);
    for (const auto& entry : found_) segments.push_back(entry.second);
  }
  std::vector<SegmentReading> readings;
  readings.reserve(segments.size());
  for (const auto& segment : segments) readings.push_back(read_one(*segment));
  return readings;
}

}  // namespace hwperf::region
