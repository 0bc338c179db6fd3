// The collector half of the PAPI collector: turns a CounterSource's raw per-(event, CPU) counts
// into families. Everything that can be decided at startup is: family names and HELP, which
// counters feed which series and with which labels, and the status families (dropped counters,
// event sets). A scrape takes one lock, reads every counter once, and builds samples.
#include "collectors/papi/papi_collector.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <set>
#include <stdexcept>
#include <tuple>

#include "collectors/metrics.h"
#include "collectors/papi/papi_families.h"
#include "collectors/prepared_family.h"
#include "common/cpu_list.h"
#include "common/log.h"
#include "config/errors.h"
#include "topology/topology.h"

namespace hwperf {
namespace {

using events::ExportedEvent;
using papi::CounterSource;

class UnavailablePapiCollector final : public Collector, public ConstantFamilies {
 public:
  explicit UnavailablePapiCollector(const std::string& reason)
      : status_(papi::availability_family(reason)) {}
  std::string name() const override { return "papi"; }
  void collect(std::vector<prometheus::MetricFamily>&) override {}
  void collect_constant(std::vector<prometheus::MetricFamily>& out) const override {
    out.push_back(status_);
  }

 private:
  const prometheus::MetricFamily status_;
};

class PapiCollector final : public Collector,
                            public ConstantFamilies,
                            public ConfiguredFamilies,
                            public PreparedText {
 public:
  PapiCollector(const PapiCollectorConfig& config, const std::vector<ExportedEvent>& events,
                const std::vector<papi::ExportedGroup>& groups,
                const std::vector<papi::DroppedGroup>& dropped, const Topology& topology,
                std::unique_ptr<CounterSource> source, papi::Maintenance maintenance)
      : source_(std::move(source)), maintenance_(std::move(maintenance)) {
    if (!source_) throw std::invalid_argument("papi collector: no counter source");
    const auto& layout = source_->layout();
    raw_.assign(layout.counters.size(), 0);
    previous_.assign(layout.counters.size(), 0);
    totals_.assign(layout.counters.size(), 0);
    failures_.assign(layout.event_sets.size(), std::string());
    sets_.assign(layout.event_sets.size(), SetHealth{});
    for (const auto& set : layout.event_sets) read_errors_.emplace(set.cpu, 0);
    // Specs from resolve_event_specs are named already; naming again is cheap and covers
    // sources built directly (tests), through the same one function.
    std::vector<ExportedEvent> named = events;
    auto problems = events::name_families(named, config.granularity);
    std::vector<std::string> group_of(named.size());
    for (const auto& group : groups) append_group(config, group, named, group_of, problems);
    if (!problems.empty()) throw ConfigError(std::move(problems));
    std::set<std::string> declared;  // a family shared by several events is declared once
    for (const auto& event : named) {
      event_names_.push_back(event.event);
      if (declared.insert(event.family).second) declared_.push_back({event.family, event.where});
    }
    families_ = papi::event_families(config, named, group_of, topology, layout);
    status_ = papi::status_families(named, events.size(), layout, dropped);
    if (maintenance_.online_cpus) {
      for (const auto& set : layout.event_sets) cpu_online_.emplace(set.cpu, true);
      if (const auto online = maintenance_.online_cpus()) note_online(*online, false);
    }
    prepare_text();
    if (maintenance_.period.count() > 0) {
      maintainer_ = std::thread([this] { maintain(); });
    }
  }

  ~PapiCollector() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (maintainer_.joinable()) maintainer_.join();
  }

  std::string name() const override { return "papi"; }
  std::vector<FamilyDeclaration> declared_families() const override { return declared_; }

  // Availability, event info, dropped events and event-set shapes only change at startup:
  // constant families (collector.h), serialized once.
  void collect_constant(std::vector<prometheus::MetricFamily>& out) const override {
    out.insert(out.end(), status_.begin(), status_.end());
  }

  void collect(std::vector<prometheus::MetricFamily>& out) override {
    const Reading reading = read();
    if (!reading.online.empty()) {
      auto family = online_family();
      for (const auto& [cpu, up] : reading.online) {
        add_gauge(family, {{"cpu", std::to_string(cpu)}}, up ? 1.0 : 0.0);
      }
      out.push_back(std::move(family));
    }
    for (const auto& event : families_) {
      auto family = events::counter_family(event.name, event.help);
      events::add_series(family, event.series, reading.values, 0, event.unit);
      out.push_back(std::move(family));
    }
    if (!reading.read_errors.empty()) {
      auto errors = read_errors_family();
      for (const auto& [cpu, count] : reading.read_errors) {
        add_counter(errors, {{"cpu", std::to_string(cpu)}}, count);
      }
      out.push_back(std::move(errors));
    }
  }

  // collect()'s bytes from the text prepared at startup (prepare_text): every series is fixed
  // then (the layout never changes, a rebuilt set counts the same counters), so a scrape writes
  // its values only.
  void collect_text(std::string& out, ExpositionFormat format) override {
    const Reading reading = read();
    if (!reading.online.empty()) {
      PreparedFamily::Writer online(*prepared_online_, out, format);
      std::size_t series = 0;
      for (const auto& entry : reading.online) online.sample(series++, entry.second ? 1.0 : 0.0);
    }
    for (std::size_t k = 0; k < families_.size(); ++k) {
      PreparedFamily::Writer family(prepared_events_[k], out, format);
      family.open();
      events::write_series(family, 0, families_[k].series, reading.values, 0, families_[k].unit);
    }
    if (!reading.read_errors.empty()) {
      PreparedFamily::Writer errors(*prepared_errors_, out, format);
      std::size_t series = 0;
      for (const auto& entry : reading.read_errors) {
        errors.sample(series++, static_cast<double>(entry.second));
      }
    }
  }

 private:
  // One scrape's counts, read under the lock.
  struct Reading {
    std::vector<std::uint64_t> values;
    std::map<unsigned, std::uint64_t> read_errors;
    std::map<unsigned, bool> online;
  };
  Reading read() {
    // One lock for the whole read: overlapping scrapes must not interleave reads of one event
    // set, and the totals must see each reading in order.
    std::lock_guard<std::mutex> lock(mutex_);
    source_->read(raw_, failures_);
    for (std::size_t s = 0; s < failures_.size(); ++s) fold_set(s);
    return {totals_, read_errors_, cpu_online_};
  }

  static prometheus::MetricFamily online_family() {
    return make_gauge_family({"cpu", "online"},
                             "Whether the CPU is online (1) or offline (0). An offline CPU's "
                             "counters stop; they are reopened when it comes back.");
  }
  static prometheus::MetricFamily read_errors_family() {
    return make_counter_family(
        {"papi", "read", "errors"},
        "Failed reads of PAPI event sets, per CPU, since start. A failed set keeps its counters' "
        "last values while the CPU's other sets and all other CPUs are still read; the set is "
        "restarted with back-off.");
  }

  // The text path's families with every series they can have, in collect()'s order.
  void prepare_text() {
    auto online = online_family();
    for (const auto& entry : cpu_online_) {
      add_gauge(online, {{"cpu", std::to_string(entry.first)}}, 0.0);
    }
    prepared_online_.emplace(online);
    const std::vector<std::uint64_t> zeros(raw_.size(), 0);
    for (const auto& event : families_) {
      auto family = events::counter_family(event.name, event.help);
      events::add_series(family, event.series, zeros, 0, event.unit);
      prepared_events_.emplace_back(family);
    }
    auto errors = read_errors_family();
    for (const auto& entry : read_errors_) {
      add_counter(errors, {{"cpu", std::to_string(entry.first)}}, 0.0);
    }
    prepared_errors_.emplace(errors);
  }

  // Multiplexed counts above this are zeroed after being added to the totals. PAPI 7.0 scales
  // them as (enabled * 100 / running) * count in signed 64-bit: a count of 2^40 (5 minutes of
  // cycles at 3.5 GHz) leaves room for a 2^16-fold multiplexing ratio before that overflows,
  // where never resetting overflows after about 300 days at a ratio of 2.
  static constexpr std::uint64_t kResetMultiplexedAbove = std::uint64_t{1} << 40;

  // A group's members, named apart from the ungrouped events (the same event may be both, in one
  // family), then its enabled and running times (papi_group_source.h), with their group label.
  static void append_group(const PapiCollectorConfig& config, const papi::ExportedGroup& group,
                           std::vector<ExportedEvent>& named, std::vector<std::string>& group_of,
                           std::vector<std::string>& problems) {
    std::vector<ExportedEvent> members = group.members;
    auto naming = events::name_families(members, config.granularity);
    problems.insert(problems.end(), naming.begin(), naming.end());
    const char* const what[] = {
        "Seconds each event group was enabled (the kernel's time_enabled), per group: with "
        "_group_running_seconds_total, the share of the time its events were on the counters.",
        "Seconds each event group was on the counters (the kernel's time_running), per group; "
        "below _group_enabled_seconds_total when the kernel multiplexed it, and its members' "
        "counts are then scaled by the group's one share."};
    const char* const metric[] = {"group_enabled_seconds", "group_running_seconds"};
    for (std::size_t t = 0; t < 2; ++t) {
      ExportedEvent time;
      time.metric = metric[t];
      time.description = what[t];
      time.unit = events::Unit::nanoseconds;
      time.family = events::counter_family_name(config.granularity, time);
      members.push_back(std::move(time));
    }
    for (auto& member : members) {
      named.push_back(std::move(member));
      group_of.push_back(group.name);
    }
  }

  using Clock = std::chrono::steady_clock;
  struct SetHealth {
    bool failing = false;
    std::uint64_t consecutive_failures = 0;
    std::uint64_t rebuild_attempts = 0;  // since it started failing
    Clock::time_point next_rebuild{};    // when maintain() tries next
  };

  // Adds event set s's reading to the totals, or counts its failure, which the maintenance
  // thread answers by rebuilding the set with back-off. Called with mutex_ held.
  void fold_set(std::size_t s) {
    const auto& set = source_->layout().event_sets[s];
    SetHealth& health = sets_[s];
    const std::string where =
        "event set " + std::to_string(set.index) + " on CPU " + std::to_string(set.cpu);
    if (!failures_[s].empty()) {
      ++read_errors_[set.cpu];
      ++health.consecutive_failures;
      if (!health.failing) {
        log::warn("papi: reading " + where + " failed: " + failures_[s] +
                  " (the CPU went offline, or a pinned group was pushed off the counters?); its "
                  "counters keep their last values, everything else is still read, and the set "
                  "is rebuilt with back-off (at most " +
                  std::to_string(maintenance_.max_backoff.count() / 1000) +
                  " s apart); hwperf_papi_read_errors_total counts the failures");
        health.failing = true;
        health.next_rebuild = maintenance_.now();
      }
      return;
    }
    if (health.failing) {
      log::info("papi: " + where + " reads again after " +
                std::to_string(health.consecutive_failures) + " failed scrapes");
      health = SetHealth{};
    }
    bool reset = false;
    for (std::size_t i : set.counters) {
      const std::int64_t raw = raw_[i];
      if (raw < 0) {
        // Every one is logged, not just a counter's first: each loses what the set counted
        // since the previous reading, and they stay rare, since the set is zeroed below and has
        // to overflow afresh before the next.
        log::warn("papi: " + where + " returned a negative count (" + std::to_string(raw) +
                  ") for " + event_names_.at(source_->layout().counters[i].event) +
                  ": PAPI's multiplex scaling overflowed; the reading is skipped and the set "
                  "zeroed, the exported total keeps what was counted before");
        reset = true;
        continue;
      }
      const auto count = static_cast<std::uint64_t>(raw);
      // A multiplexed count is a scaled estimate and can come out below the previous one; a
      // Prometheus counter must not go down, so only growth is added.
      if (count > previous_[i]) {
        totals_[i] += count - previous_[i];
        previous_[i] = count;
      }
      if (set.multiplexed && count > kResetMultiplexedAbove) reset = true;
    }
    if (reset) {
      // Only a reset that happened starts a new baseline: after a failed one the next reading
      // still holds what was already added, and zeroing the baseline would add it twice.
      if (const std::string problem = source_->reset(s); problem.empty()) {
        for (std::size_t i : set.counters) previous_[i] = 0;
      } else {
        log::warn("papi: zeroing " + where + " failed: " + problem +
                  "; its counts go on from where they were");
      }
    }
  }

  // Rebuilds set s; on success its next reading starts a new baseline, so totals stay monotonic.
  // Called with mutex_ held.
  bool rebuild(std::size_t s, const std::string& why) {
    const auto& set = source_->layout().event_sets[s];
    const std::string problem = source_->rebuild(s);
    if (problem.empty()) {
      for (std::size_t i : set.counters) previous_[i] = 0;
      return true;
    }
    // Once per failing spell: the back-off retries say nothing new.
    if (sets_[s].rebuild_attempts == 0)
      log::info("papi: rebuilding event set " + std::to_string(set.index) + " on CPU " +
                std::to_string(set.cpu) + " (" + why + ") failed: " + problem + "; will retry");
    return false;
  }

  // Records which CPUs are online, logging each transition once; with `rebuild_returning`, the
  // sets of a CPU that came back are rebuilt (the kernel dropped their events when it left).
  // Called with mutex_ held.
  void note_online(const std::vector<unsigned>& online, bool rebuild_returning) {
    for (auto& [cpu, up] : cpu_online_) {
      const bool now_up = std::binary_search(online.begin(), online.end(), cpu);
      if (now_up == up) continue;
      up = now_up;
      if (!now_up) {
        log::warn("papi: CPU " + std::to_string(cpu) +
                  " is offline: its counters stop and keep "
                  "their totals (hwperf_cpu_online{cpu=\"" +
                  std::to_string(cpu) +
                  "\"} 0) until "
                  "it comes back");
        continue;
      }
      log::info("papi: CPU " + std::to_string(cpu) +
                " is online again: its event sets are "
                "opened anew and count from their previous totals");
      if (!rebuild_returning) continue;
      const auto& sets = source_->layout().event_sets;
      for (std::size_t s = 0; s < sets.size(); ++s) {
        if (sets[s].cpu != cpu || rebuild(s, "CPU back online")) continue;
        SetHealth& health = sets_[s];
        health.failing = true;
        health.next_rebuild = maintenance_.now();
      }
    }
  }

  // The maintenance thread (papi::Maintenance): hotplug first, then failed sets whose back-off
  // has run out.
  void maintain() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!wake_.wait_for(lock, maintenance_.period, [this] { return stopping_; })) {
      if (maintenance_.online_cpus) {
        lock.unlock();
        const auto online = maintenance_.online_cpus();
        lock.lock();
        if (stopping_) break;
        if (online) note_online(*online, true);
      }
      const auto now = maintenance_.now();
      for (std::size_t s = 0; s < sets_.size(); ++s) {
        SetHealth& health = sets_[s];
        if (!health.failing || now < health.next_rebuild) continue;
        const auto cpu = source_->layout().event_sets[s].cpu;
        if (const auto it = cpu_online_.find(cpu); it != cpu_online_.end() && !it->second) continue;
        if (rebuild(s, "it failed to read")) {
          // Counted as recovered once it reads (fold_set), as after a transient failure.
          health.next_rebuild = now + maintenance_.max_backoff;
          continue;
        }
        ++health.rebuild_attempts;
        const auto shift = std::min<std::uint64_t>(health.rebuild_attempts, 20);
        const auto backoff = std::min<std::chrono::milliseconds>(
            maintenance_.period * (std::uint64_t{1} << shift), maintenance_.max_backoff);
        health.next_rebuild = now + backoff;
      }
    }
  }

  std::unique_ptr<CounterSource> source_;
  std::vector<papi::EventFamily> families_;
  std::vector<std::string> event_names_;     // per event index, for messages
  std::vector<FamilyDeclaration> declared_;  // event families under their configured names
  std::vector<prometheus::MetricFamily> status_;
  // The text path's (collect_text): collect()'s families prepared with all their series.
  std::optional<PreparedFamily> prepared_online_;
  std::vector<PreparedFamily> prepared_events_;  // per families_ entry
  std::optional<PreparedFamily> prepared_errors_;
  std::mutex mutex_;
  // Guarded by mutex_, per layout counter: the latest reading, the reading last added to the
  // total (0 after a reset or restart), and the running total that is exported.
  std::vector<std::int64_t> raw_;
  std::vector<std::uint64_t> previous_;
  std::vector<std::uint64_t> totals_;
  std::vector<std::string> failures_;              // per event set, from the last read
  std::vector<SetHealth> sets_;                    // per event set
  std::map<unsigned, std::uint64_t> read_errors_;  // per CPU with sets, since start
  papi::Maintenance maintenance_;
  std::map<unsigned, bool> cpu_online_;  // per CPU with sets, when hotplug is watched
  bool stopping_ = false;
  std::condition_variable wake_;
  std::thread maintainer_;  // last: started once everything above exists
};

}  // namespace

std::unique_ptr<Collector> make_papi_unavailable_collector(const std::string& reason) {
  return std::make_unique<UnavailablePapiCollector>(reason);
}

std::unique_ptr<Collector> make_papi_collector_from_source(
    const PapiCollectorConfig& config, std::vector<events::ExportedEvent> events,
    const Topology& topology, std::unique_ptr<papi::CounterSource> source,
    papi::Maintenance maintenance, std::vector<papi::ExportedGroup> groups,
    std::vector<papi::DroppedGroup> dropped) {
  return std::make_unique<PapiCollector>(config, events, groups, dropped, topology,
                                         std::move(source), std::move(maintenance));
}

}  // namespace hwperf
