#include "collectors/perf/bpf/engine_backend.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "collectors/perf/bpf/removed_cgroups.h"
#include "common/log.h"

namespace hwperf::perf::bpf {

std::optional<GroupReading> subtree_group_reading(const EngineReading& reading, std::uint64_t id,
                                                  std::size_t first_event, std::size_t members,
                                                  std::size_t cpus, std::size_t cpu_index) {
  // Every unit of every tracked cgroup looks its sum up at each scrape: a search, not a scan.
  const auto sum = std::lower_bound(
      reading.subtree.begin(), reading.subtree.end(), id,
      [](const CgroupCounts& counts, std::uint64_t wanted) { return counts.id < wanted; });
  if (sum == reading.subtree.end() || sum->id != id) return std::nullopt;
  return group_reading(*sum, first_event, members, cpus, cpu_index);
}

void UnattributedTotals::add(const EngineReading& reading) {
  const auto& now = reading.unattributed;
  if (now.size() != last_.size()) {  // the first reading: every counter from zero
    last_.assign(now.size(), Reading{});
    totals_.counts.assign(now.size(), 0);
  }
  for (std::size_t i = 0; i < now.size(); ++i) {
    totals_.counts[i] += delta_between(last_[i], now[i]).count;
    last_[i] = now[i];
  }
  totals_.missed_switches = reading.missed_switches;
}

struct EngineBackend::Shared {
  explicit Shared(CgroupEngine opened)
      : engine(std::move(opened)), removed(engine.event_count() * engine.cpus().size()) {}
  CgroupEngine engine;
  std::mutex mutex;  // everything below
  EngineReading reading;
  UnattributedTotals unattributed;
  int read_error = 0;          // of the current reading: EIO when the engine could not be read
  std::string failed_because;  // why the last read failed, "" when it did not
  ReadingGenerations generations;
  std::unordered_map<std::uint64_t, std::size_t> units_of;  // tracked cgroup -> its open units
  // Tracked once and forgotten since, while the engine still has their entries: their counts
  // were their own, never a removed_under target's.
  std::unordered_set<std::uint64_t> was_tracked;
  RemovedCgroups removed;
  std::unordered_map<std::uint64_t, std::size_t> scope_units;  // removed_under cgroup -> units

  // The removed cgroups no target counted, gathered from the current reading.
  void gather_removed() {
    removed.gather(reading.own, reading.lineages, [this](std::uint64_t id) {
      return units_of.count(id) != 0 || was_tracked.count(id) != 0;
    });
    std::unordered_set<std::uint64_t> present;
    for (const auto& entry : reading.own) present.insert(entry.id);
    for (auto it = was_tracked.begin(); it != was_tracked.end();) {
      it = present.count(*it) != 0 ? std::next(it) : was_tracked.erase(it);
    }
  }

  // The current reading, fresh when the unit has had it (under mutex).
  void refresh_for(std::uint64_t had) {
    if (!generations.needs_fresh(had)) return;
    try {
      reading = engine.read();
      unattributed.add(reading);
      read_error = 0;
      gather_removed();
      if (!failed_because.empty()) log::info("cgroup: the BPF engine is read again");
      failed_because.clear();
    } catch (const std::runtime_error& e) {
      // Once per reason, not at every scrape; the units' read errors count each.
      if (failed_because != e.what()) log::warn(std::string("cgroup: ") + e.what());
      failed_because = e.what();
      read_error = EIO;
    }
    generations.made();
  }
};

namespace {

class EngineUnit final : public OpenUnit {
 public:
  // Of the cgroup `id`'s subtree sum, or (`scope`) of its removed, never counted descendants.
  EngineUnit(std::shared_ptr<EngineBackend::Shared> shared, std::uint64_t id, bool scope,
             std::size_t group, std::size_t cpu_index)
      : shared_(std::move(shared)), id_(id), scope_(scope), group_(group), cpu_index_(cpu_index) {
    had_ = shared_->generations.opened();
  }
  ~EngineUnit() override {
    std::lock_guard lock(shared_->mutex);
    auto& units = scope_ ? shared_->scope_units : shared_->units_of;
    auto it = units.find(id_);
    if (it == units.end() || --it->second > 0) return;
    units.erase(it);
    try {
      if (scope_) {
        shared_->removed.unscope(id_);
      } else {
        shared_->engine.forget(id_);
        shared_->was_tracked.insert(id_);
      }
    } catch (const std::exception&) {
      // Out of memory: the cgroup stays tracked, which costs a map entry, not the exporter.
    }
  }
  EngineUnit(const EngineUnit&) = delete;
  EngineUnit& operator=(const EngineUnit&) = delete;

  OrErrno<GroupReading> read() override {
    std::lock_guard lock(shared_->mutex);
    shared_->refresh_for(had_);
    had_ = shared_->generations.current();
    if (shared_->read_error != 0) return {GroupReading{}, shared_->read_error};
    const CgroupEngine& engine = shared_->engine;
    auto reading =
        scope_ ? scope_group_reading()
               : subtree_group_reading(shared_->reading, id_, engine.first_event_of(group_),
                                       engine.group_size(group_), engine.cpus().size(), cpu_index_);
    // No sum yet (nothing ran), or none any more (the cgroup was removed and its entry
    // reclaimed before the rescan closed it): the last reading stands.
    if (reading) last_ = std::move(*reading);
    if (last_.values.empty()) last_.values.assign(engine.group_size(group_), 0);
    return {last_, 0};
  }
  // The engine's descriptors are the backend's (shared_descriptors), none a unit's own.
  std::size_t descriptors() const override { return 0; }

 private:
  std::optional<GroupReading> scope_group_reading() const {
    const auto* sum = shared_->removed.sum(id_);
    if (sum == nullptr) return std::nullopt;
    CgroupCounts counts;
    counts.values = *sum;
    const CgroupEngine& engine = shared_->engine;
    return group_reading(counts, engine.first_event_of(group_), engine.group_size(group_),
                         engine.cpus().size(), cpu_index_);
  }

  std::shared_ptr<EngineBackend::Shared> shared_;
  std::uint64_t id_;
  bool scope_;
  std::size_t group_;
  std::size_t cpu_index_;
  std::uint64_t had_ = 0;
  GroupReading last_;
};

bool same_event(const EventEncoding& a, const EventEncoding& b) {
  return a.type == b.type && a.config == b.config && a.config1 == b.config1 &&
         a.config2 == b.config2 && a.exclude_user == b.exclude_user &&
         a.exclude_kernel == b.exclude_kernel && a.exclude_hv == b.exclude_hv;
}

// Which of the layout's units `events` is: the set passes the layout's own vectors.
std::optional<std::size_t> unit_of(const CounterLayout& layout,
                                   const std::vector<EventEncoding>& events) {
  for (std::size_t unit = 0; unit < layout.units.size(); ++unit) {
    if (&layout.units[unit] == &events) return unit;
  }
  for (std::size_t unit = 0; unit < layout.units.size(); ++unit) {
    const auto& mine = layout.units[unit];
    if (mine.size() == events.size() &&
        std::equal(mine.begin(), mine.end(), events.begin(), same_event)) {
      return unit;
    }
  }
  return std::nullopt;
}

EngineOptions with_layout(const CounterLayout& layout, EngineOptions options) {
  options.groups = layout.units;
  options.cpus.clear();
  for (const int cpu : layout.cpus) {
    if (cpu < 0)
      throw std::invalid_argument("bpf: the engine counts on CPUs, not wherever a task runs");
    options.cpus.push_back(static_cast<unsigned>(cpu));
  }
  return options;
}

}  // namespace

EngineBackend::EngineBackend(std::shared_ptr<const CounterLayout> layout, EngineOptions options)
    : layout_(std::move(layout)),
      shared_(
          std::make_shared<Shared>(CgroupEngine::open(with_layout(*layout_, std::move(options))))) {
}

EngineBackend::~EngineBackend() = default;

OrErrno<std::unique_ptr<OpenUnit>> EngineBackend::open(const std::vector<EventEncoding>& events,
                                                       const CountingTarget& target,
                                                       int cpu) const {
  if (!target.options.cgroup) return {nullptr, EOPNOTSUPP};  // the engine counts cgroups only
  const auto unit = unit_of(*layout_, events);
  const auto& cpus = shared_->engine.cpus();
  const auto at = std::find(cpus.begin(), cpus.end(), static_cast<unsigned>(cpu));
  if (!unit || cpu < 0 || at == cpus.end()) return {nullptr, EINVAL};
  const auto id = cgroup_id_of(target.pid);
  if (!id.ok()) return {nullptr, id.error};
  std::lock_guard lock(shared_->mutex);
  const bool scope = target.removed_descendants;
  auto& units = (scope ? shared_->scope_units : shared_->units_of)[id.value];
  if (units == 0 && scope) shared_->removed.scope(id.value);
  if (units == 0 && !scope) {
    if (const int error = shared_->engine.track(id.value); error != 0) {
      shared_->units_of.erase(id.value);
      return {nullptr, error};
    }
  }
  ++units;
  return {std::make_unique<EngineUnit>(shared_, id.value, scope, *unit,
                                       static_cast<std::size_t>(at - cpus.begin())),
          0};
}

std::size_t EngineBackend::shared_descriptors() const {
  return shared_->engine.perf_descriptors() + kEngineBpfDescriptors;
}

bool EngineBackend::reopen_shared(const std::vector<int>& cpus) const {
  for (const int cpu : cpus) shared_->engine.reopen_cpu(static_cast<unsigned>(cpu));
  return true;
}

std::optional<CountingBackend::Unattributed> EngineBackend::unattributed() const {
  std::lock_guard lock(shared_->mutex);
  auto out = shared_->unattributed.totals();
  // Before the first read: nothing counted yet, in the layout's shape.
  if (out.counts.empty()) {
    out.counts.assign(shared_->engine.event_count() * shared_->engine.cpus().size(), 0);
  }
  return out;
}

}  // namespace hwperf::perf::bpf
