#include "collectors/region/region_export.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <stdexcept>
#include <string_view>
#include <utility>

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

}  // namespace

bool same_event(const perf::EventEncoding& encoding, const SegmentEvent& event) {
  return same_encoding(encoding, event.type, event.config, event.config1, event.config2);
}

std::vector<RegionEvent> region_events(const std::vector<perf::CountedEvent>& counted) {
  std::vector<RegionEvent> events;
  std::vector<events::ExportedEvent> specs;
  for (const auto& event : counted) {
    const auto& e = event.encoding;
    const bool known = std::any_of(events.begin(), events.end(), [&](const RegionEvent& other) {
      return same_encoding(other.encoding, e.type, e.config, e.config1, e.config2);
    });
    // The same event in two groups is counted twice by the process targets; a region has it
    // once. Two events under one metric would be one family: the first is kept.
    const bool named =
        std::any_of(specs.begin(), specs.end(),
                    [&](const events::ExportedEvent& spec) { return spec.metric == event.metric; });
    if (known || named || event.metric.empty()) continue;
    events::ExportedEvent spec;
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
          "Reads of a (region, thread, CPU) slot left out, its last values exported: why=torn "
          "when the writer kept it odd or changing, why=budget when the read's budget of retries "
          "was spent on such slots before it, why=backwards when its counts went backwards "
          "(refused).")),
      dropped_(make_counter_family(
          {"region", "dropped", "begins"},
          "Region begins the marker library could not count (region or slot table full, nesting "
          "too deep, events failed), as the program reports it.")),
      thread_calls_(make_counter_family(
          {"region", "thread", "calls"},
          "Completed begin/end pairs of each marked region per thread (tid) of the command.")),
      thread_seconds_(
          make_counter_family({"region", "thread", "seconds"},
                              "Time inside each marked region per thread (tid) of the command.")),
      folded_(make_gauge_family(
          {"region", "thread", "slots", "folded"},
          "Slots of the command's segment whose counts went to tid=\"other\" at this scrape: "
          "past the first " +
              std::to_string(kMaxThreadPairs) +
              " (region, thread) pairs, per-thread series are not made (the region's series "
              "have every slot).")) {
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

namespace {

std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
  std::uint64_t sum = 0;
  return __builtin_add_overflow(a, b, &sum) ? std::numeric_limits<std::uint64_t>::max() : sum;
}

// Keys point into the readings' snapshots, which outlive the sums: no copy of a name per slot.
using SumKey = std::pair<std::string_view, int>;  // (region, CPU or -1), or (region, tid)

constexpr int kNoCpu = -1;       // one series per region
constexpr int kUnknownCpu = -2;  // per_cpu, and a CPU the topology does not have: left out

}  // namespace

// One series' values summed over slots, each at most 2^64 - 1.
struct RegionFamilies::Sum {
  std::uint64_t calls = 0;
  std::uint64_t time_ns = 0;
  std::vector<std::uint64_t> counts;
  void add(const SlotValues& slot, const std::vector<std::optional<std::size_t>>& matched,
           std::size_t events) {
    counts.resize(events);
    calls = saturating_add(calls, slot.calls);
    time_ns = saturating_add(time_ns, slot.time_ns);
    for (std::size_t e = 0; e < slot.counts.size() && e < matched.size(); ++e) {
      if (matched[e]) counts[*matched[e]] = saturating_add(counts[*matched[e]], slot.counts[e]);
    }
  }
};

int RegionFamilies::series_cpu(std::int32_t cpu) const {
  if (cpus_.empty()) return kNoCpu;
  const bool known = cpu >= 0 && std::any_of(cpus_.begin(), cpus_.end(), [&](const auto& t) {
                       return t.cpu == static_cast<unsigned>(cpu);
                     });
  return known ? cpu : kUnknownCpu;
}

void RegionFamilies::add_segment_series(const std::string& target, const SegmentReading& reading) {
  add_gauge(valid_,
            {{"target", target},
             {"pid", std::to_string(reading.pid)},
             {"reason", to_string(reading.problem)}},
            reading.problem == Problem::none ? 1.0 : 0.0);
  if (reading.problem != Problem::none || !reading.snapshot) return;
  const Labels labels = {{"target", target}, {"pid", std::to_string(reading.pid)}};
  add_counter(dropped_, labels, std::uint64_t{reading.snapshot->dropped});
  for (const auto& [why, value] :
       {std::pair{"torn", reading.torn}, std::pair{"budget", reading.unread},
        std::pair{"backwards", reading.backwards}}) {
    Labels with = labels;
    with.emplace_back("why", why);
    add_counter(skipped_, with, value);
  }
}

void RegionFamilies::add_region_series(const std::string& target, std::string_view region, int cpu,
                                       const Sum& sum) {
  Labels labels = {{"target", target}, {"region", std::string(region)}};
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

void RegionFamilies::add_thread_series(const std::string& target, std::string_view region,
                                       const std::string& tid, const Sum& sum) {
  const Labels labels = {{"target", target}, {"region", std::string(region)}, {"tid", tid}};
  add_counter(thread_calls_, labels, sum.calls);
  add_counter(thread_seconds_, labels, nanoseconds_to_seconds(sum.time_ns));
  for (std::size_t e = 0; e < events_.size(); ++e) {
    events::add_count(thread_counts_[e], labels, sum.counts[e], events_[e].unit);
  }
}

void RegionFamilies::add(const std::string& target, const std::vector<SegmentReading>& readings,
                         bool per_thread) {
  std::map<SumKey, Sum> sums, threads;
  std::map<std::string_view, Sum> other_threads;  // per region: the pairs past the limit
  std::uint64_t folded = 0;
  for (const auto& reading : readings) {
    add_segment_series(target, reading);
    if (reading.problem != Problem::none || !reading.snapshot) continue;
    const Snapshot& snapshot = *reading.snapshot;
    for (const auto& slot : snapshot.slots) {
      if (!slot || !snapshot.regions[slot->region]) continue;
      const std::string_view name = *snapshot.regions[slot->region];
      if (per_thread) {
        auto it = threads.find({name, slot->tid});
        if (it == threads.end() && threads.size() < kMaxThreadPairs) {
          it = threads.emplace(SumKey{name, slot->tid}, Sum{}).first;
        }
        if (it != threads.end()) {
          it->second.add(*slot, reading.matched, events_.size());
        } else {
          other_threads[name].add(*slot, reading.matched, events_.size());
          ++folded;
        }
      }
      const int cpu = series_cpu(slot->cpu);
      if (cpu != kUnknownCpu) sums[{name, cpu}].add(*slot, reading.matched, events_.size());
    }
  }
  add_gauge(segments_, {{"target", target}}, static_cast<double>(readings.size()));
  // Each family's series made in place: no copies left behind by a growing vector, which the
  // allocator of each scraping thread would keep (a scrape can have thousands here).
  for (auto* family : {&calls_, &seconds_})
    family->metric.reserve(family->metric.size() + sums.size());
  for (auto& family : counts_) family.metric.reserve(family.metric.size() + sums.size());
  const std::size_t per_thread_series = threads.size() + other_threads.size();
  for (auto* family : {&thread_calls_, &thread_seconds_}) {
    family->metric.reserve(family->metric.size() + per_thread_series);
  }
  for (auto& family : thread_counts_) {
    family.metric.reserve(family.metric.size() + per_thread_series);
  }
  for (const auto& [key, sum] : sums) add_region_series(target, key.first, key.second, sum);
  for (const auto& [key, sum] : threads) {
    add_thread_series(target, key.first, std::to_string(key.second), sum);
  }
  for (const auto& [name, sum] : other_threads) add_thread_series(target, name, "other", sum);
  if (per_thread) add_gauge(folded_, {{"target", target}}, static_cast<double>(folded));
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
  append_unless_empty(out, std::move(folded_));
}

}  // namespace hwperf::region
