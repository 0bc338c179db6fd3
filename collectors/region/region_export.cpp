#include "collectors/region/region_export.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "collectors/events/emission.h"
#include "collectors/events/event_specs.h"
#include "collectors/metrics.h"
#include "common/log.h"

namespace hwperf::region {
namespace {

bool same_encoding(const perf::EventEncoding& a, std::uint32_t type, std::uint64_t config,
                   std::uint64_t config1, std::uint64_t config2) {
  return a.type == type && a.config == config && a.config1 == config1 && a.config2 == config2;
}

// A note is logged once per segment; a scribbling program could invent new ones forever.
constexpr std::size_t kMaxLoggedNotes = 64;

}  // namespace

std::vector<RegionEvent> region_events(const std::vector<perf::CountedEvent>& counted) {
  std::vector<RegionEvent> events;
  std::vector<events::EventSpec> specs;
  for (const auto& event : counted) {
    const auto& e = event.encoding;
    const bool known = std::any_of(events.begin(), events.end(), [&](const RegionEvent& other) {
      return same_encoding(other.encoding, e.type, e.config, e.config1, e.config2);
    });
    // The same event in two groups is counted twice by the process targets; a region has it
    // once. Two events under one metric would be one family: the first is kept.
    const bool named = std::any_of(specs.begin(), specs.end(), [&](const events::EventSpec& spec) {
      return spec.metric == event.metric;
    });
    if (known || named || event.metric.empty()) continue;
    events::EventSpec spec;
    spec.event = event.event;
    spec.metric = event.metric;
    spec.where = event.where;
    specs.push_back(spec);
    events.push_back({event.encoding, "", "", event.event, event.unit});
  }
  auto thread_specs = specs;
  for (auto [level, named] :
       {std::pair{"region", &specs}, std::pair{"region_thread", &thread_specs}}) {
    const auto problems = events::name_families(*named, level);
    if (!problems.empty()) throw std::invalid_argument(problems.front());
  }
  for (std::size_t i = 0; i < events.size(); ++i) {
    events[i].family = specs[i].family;
    events[i].thread_family = thread_specs[i].family;
  }
  return events;
}

std::vector<hwperf_region_event> segment_event_table(const std::vector<RegionEvent>& events,
                                                     std::vector<std::string>& left_out) {
  std::vector<hwperf_region_event> table;
  for (const auto& event : events) {
    if (table.size() == HWPERF_REGION_MAX_EVENTS) {
      left_out.push_back(event.event);
      continue;
    }
    hwperf_region_event entry{};
    entry.type = event.encoding.type;
    entry.exclude_kernel = event.encoding.exclude_kernel ? 1 : 0;
    entry.config = event.encoding.config;
    entry.config1 = event.encoding.config1;
    entry.config2 = event.encoding.config2;
    std::strncpy(entry.name, event.event.c_str(), sizeof entry.name - 1);
    table.push_back(entry);
  }
  return table;
}

TargetRegions::TargetRegions(std::string target, std::string procfs,
                             const std::vector<RegionEvent>& events, int own_fd)
    : target_(std::move(target)), procfs_(std::move(procfs)), events_(events) {
  if (own_fd < 0) return;
  // From a value, not emplace(): clang 14 decides a nested struct with member initializers is not
  // default-constructible while the enclosing class (whose optional<Segment> asks) is incomplete.
  own_.emplace(Segment{});
  auto opening = map_own_segment(own_fd);
  own_->opened = std::move(opening.segment);
  log_change(*own_, opening.problem, opening.reason);
}

void TargetRegions::log_change(Segment& segment, Problem problem, const std::string& reason) {
  if (problem == segment.problem && reason == segment.reason) return;
  const std::string whose = "process target " + target_ + ": region segment" +
                            (segment.pid > 0 ? " of pid " + std::to_string(segment.pid) : "");
  if (problem == Problem::none) {
    log::info(whose + ": valid");
  } else {
    log::warn(whose + ": " + to_string(problem) + ": " + reason +
              "; its regions are not exported until it reads valid again");
  }
  segment.problem = problem;
  segment.reason = reason;
}

void TargetRegions::update(const std::vector<ProcessKey>& processes) {
  std::map<ProcessKey, Segment> kept;
  std::vector<ProcessKey> missing;
  {
    std::lock_guard lock(mutex_);
    for (const auto& key : processes) {
      auto it = found_.find(key);
      if (it != found_.end()) {
        kept.emplace(key, std::move(it->second));
      } else {
        missing.push_back(key);
      }
    }
  }
  // Outside the lock: scrapes go on reading what is mapped while /proc is looked at.
  std::map<ProcessKey, Segment> added;
  for (const auto& key : missing) {
    auto opening = find_process_segment(procfs_, key.first);
    if (opening.problem == Problem::not_found) continue;
    Segment segment;
    segment.pid = key.first;
    segment.opened = std::move(opening.segment);
    log_change(segment, opening.problem, opening.reason);
    added.emplace(key, std::move(segment));
  }
  std::lock_guard lock(mutex_);
  for (auto& [key, segment] : added) kept.emplace(key, std::move(segment));
  found_ = std::move(kept);
}

SegmentReading TargetRegions::read_one(Segment& segment) {
  SegmentReading reading;
  reading.pid = segment.pid;
  if (!segment.opened) {
    reading.problem = segment.problem;
    reading.reason = segment.reason;
    return reading;
  }
  const auto& mapping = segment.opened->mapping;
  ReadResult result = segment.reader.read(mapping.data(), mapping.size());
  log_change(segment, result.problem, result.reason);
  reading.problem = result.problem;
  reading.reason = result.reason;
  if (!result.ok()) return reading;
  reading.snapshot = std::move(result.snapshot);
  segment.torn += reading.snapshot.torn_slots;
  reading.torn = segment.torn;
  reading.backwards = segment.reader.backwards();
  std::vector<std::string> notes = reading.snapshot.notes;
  for (std::size_t e = 0; e < reading.snapshot.events.size(); ++e) {
    const auto& event = reading.snapshot.events[e];
    std::optional<std::size_t> match;
    for (std::size_t i = 0; i < events_.size() && !match; ++i) {
      if (same_encoding(events_[i].encoding, event.type, event.config, event.config1,
                        event.config2)) {
        match = i;
      }
    }
    if (!match) {
      notes.push_back("event " + std::to_string(e) + " (\"" + event.name + "\", perf type " +
                      std::to_string(event.type) + " config " + std::to_string(event.config) +
                      ") is not one this exporter counts: skipped");
    }
    reading.matched.push_back(match);
  }
  for (const auto& note : notes) {
    if (segment.logged.size() >= kMaxLoggedNotes || !segment.logged.insert(note).second) continue;
    log::warn("process target " + target_ + ": region segment" +
              (segment.pid > 0 ? " of pid " + std::to_string(segment.pid) : "") + ": " + note);
  }
  return reading;
}

std::vector<SegmentReading> TargetRegions::read() {
  std::lock_guard lock(mutex_);
  std::vector<SegmentReading> readings;
  if (own_) readings.push_back(read_one(*own_));
  for (auto& [key, segment] : found_) readings.push_back(read_one(segment));
  return readings;
}

RegionFamilies::RegionFamilies(const std::vector<RegionEvent>& events,
                               const std::vector<HardwareThread>& cpus)
    : events_(events),
      cpus_(cpus),
      calls_(make_counter_family(
          {"region", "calls"},
          "Completed begin/end pairs of each marked region of the target's programs, summed over "
          "their threads (the --once summary has each thread's).")),
      seconds_(make_counter_family(
          {"region", "seconds"},
          "Time spent inside each marked region (CLOCK_MONOTONIC), summed over the target's "
          "threads: with several threads in a region at once it grows faster than wall time.")),
      valid_(make_gauge_family(
          {"region", "segment", "valid"},
          "1 when the region segment of the process (pid) read valid at this scrape; 0 with "
          "reason: not_ready, bad_magic, bad_version, bad_header, truncated, bad_bounds, "
          "bad_offsets, bad_slot, open_failed (the log says more). The segment is the measured "
          "program's memory: nothing in it is trusted.")),
      segments_(make_gauge_family({"region", "segments"},
                                  "Region segments found for the target (one per process that "
                                  "uses the marker library).")),
      skipped_(make_counter_family(
          {"region", "slot", "reads", "skipped"},
          "Reads of a (region, thread, CPU) slot left out: why=torn when the writer kept changing "
          "it (its last values are exported), why=backwards when its counts went backwards "
          "(refused: the previous values are kept).")),
      dropped_(make_counter_family(
          {"region", "dropped", "begins"},
          "Region begins the marker library could not count (region or slot table full, nesting "
          "too deep, events failed), as the program reports it.")),
      thread_calls_(make_counter_family(
          {"region", "thread", "calls"},
          "Completed begin/end pairs of each marked region per thread (tid) of the command.")),
      thread_seconds_(
          make_counter_family({"region", "thread", "seconds"},
                              "Time inside each marked region per thread (tid) of the command.")) {
  for (const auto& event : events_) {
    const std::string unit = event.unit == events::Unit::nanoseconds
                                 ? " Seconds, converted from the event's nanoseconds."
                                 : "";
    counts_.push_back(events::counter_family(
        event.family, "Event " + event.event +
                          " counted inside each marked region, summed over the target's threads." +
                          unit));
    thread_counts_.push_back(events::counter_family(
        event.thread_family,
        "Event " + event.event + " counted inside each marked region per thread (tid)." + unit));
  }
}

void RegionFamilies::add(const std::string& target, const std::vector<SegmentReading>& readings,
                         bool per_thread) {
  struct Sum {
    std::uint64_t calls = 0;
    std::uint64_t time_ns = 0;
    std::vector<std::uint64_t> counts;
    void add(const SlotValues& slot, const std::vector<std::optional<std::size_t>>& matched,
             std::size_t events) {
      counts.resize(events);
      calls += slot.calls;
      time_ns += slot.time_ns;
      for (std::size_t e = 0; e < slot.counts.size() && e < matched.size(); ++e) {
        if (matched[e]) counts[*matched[e]] += slot.counts[e];
      }
    }
  };
  std::map<std::pair<std::string, int>, Sum> sums;     // (region, CPU or -1)
  std::map<std::pair<std::string, int>, Sum> threads;  // (region, tid)
  for (const auto& reading : readings) {
    add_gauge(valid_,
              {{"target", target},
               {"pid", std::to_string(reading.pid)},
               {"reason", to_string(reading.problem)}},
              reading.problem == Problem::none ? 1.0 : 0.0);
    if (reading.problem != Problem::none) continue;
    const Labels labels = {{"target", target}, {"pid", std::to_string(reading.pid)}};
    add_counter(dropped_, labels, std::uint64_t{reading.snapshot.dropped});
    auto why = [&](const char* kind) {
      Labels with = labels;
      with.emplace_back("why", kind);
      return with;
    };
    add_counter(skipped_, why("torn"), reading.torn);
    add_counter(skipped_, why("backwards"), reading.backwards);
    for (const auto& slot : reading.snapshot.slots) {
      if (!slot) continue;
      const auto& name = reading.snapshot.regions[slot->region];
      if (!name) continue;
      if (per_thread) threads[{*name, slot->tid}].add(*slot, reading.matched, events_.size());
      int cpu = -1;
      if (!cpus_.empty()) {
        const auto known = std::find_if(cpus_.begin(), cpus_.end(), [&](const HardwareThread& t) {
          return slot->cpu >= 0 && t.cpu == static_cast<unsigned>(slot->cpu);
        });
        if (known == cpus_.end()) continue;
        cpu = slot->cpu;
      }
      sums[{*name, cpu}].add(*slot, reading.matched, events_.size());
    }
  }
  add_gauge(segments_, {{"target", target}}, static_cast<double>(readings.size()));
  for (const auto& [key, sum] : sums) {
    Labels labels = {{"target", target}, {"region", key.first}};
    const int cpu = key.second;  // a lambda may not capture a structured binding in C++17
    if (cpu >= 0) {
      const auto thread = std::find_if(cpus_.begin(), cpus_.end(), [cpu](const HardwareThread& t) {
        return t.cpu == static_cast<unsigned>(cpu);
      });
      const Labels cpu_labels = events::level_labels(Granularity::cpu, *thread);
      labels.insert(labels.end(), cpu_labels.begin(), cpu_labels.end());
    }
    add_counter(calls_, labels, sum.calls);
    add_counter(seconds_, labels, nanoseconds_to_seconds(sum.time_ns));
    for (std::size_t e = 0; e < events_.size(); ++e) {
      events::add_count(counts_[e], labels, sum.counts[e], events_[e].unit);
    }
  }
  for (const auto& [key, sum] : threads) {
    const Labels labels = {
        {"target", target}, {"region", key.first}, {"tid", std::to_string(key.second)}};
    add_counter(thread_calls_, labels, sum.calls);
    add_counter(thread_seconds_, labels, nanoseconds_to_seconds(sum.time_ns));
    for (std::size_t e = 0; e < events_.size(); ++e) {
      events::add_count(thread_counts_[e], labels, sum.counts[e], events_[e].unit);
    }
  }
}

void RegionFamilies::append_to(std::vector<prometheus::MetricFamily>& out) {
  append_unless_empty(out, std::move(calls_));
  append_unless_empty(out, std::move(seconds_));
  for (auto& family : counts_) append_unless_empty(out, std::move(family));
  out.push_back(std::move(valid_));
  out.push_back(std::move(segments_));
  append_unless_empty(out, std::move(skipped_));
  append_unless_empty(out, std::move(dropped_));
  append_unless_empty(out, std::move(thread_calls_));
  append_unless_empty(out, std::move(thread_seconds_));
  for (auto& family : thread_counts_) append_unless_empty(out, std::move(family));
}

}  // namespace hwperf::region
