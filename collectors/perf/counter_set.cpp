#include "collectors/perf/counter_set.h"

#include <algorithm>
#include <cerrno>
#include <utility>

namespace hwperf::perf {

namespace {

class PerfUnit final : public OpenUnit {
 public:
  explicit PerfUnit(CounterGroup group) : group_(std::move(group)) {}
  OrErrno<GroupReading> read() override { return group_.read(); }
  std::size_t descriptors() const override { return group_.size(); }

 private:
  CounterGroup group_;
};

class PerfEventBackend final : public CountingBackend {
 public:
  OrErrno<std::unique_ptr<OpenUnit>> open(const std::vector<EventEncoding>& events,
                                          const CountingTarget& target, int cpu) const override {
    if (target.removed_descendants) return {nullptr, EOPNOTSUPP};  // no cgroup event counts it
    auto opened = CounterGroup::open(events, target.pid, cpu, target.options);
    if (!opened.ok()) return {nullptr, opened.error};
    return {std::make_unique<PerfUnit>(std::move(opened.value)), 0};
  }
};

// A task bound to one CPU is enabled while it runs anywhere but counts only there: its times
// cannot tell multiplexing from time spent elsewhere, so its counts are never scaled.
bool scales(const CountingTarget& target, int cpu) {
  return target.pid < 0 || target.options.cgroup || cpu < 0;
}

}  // namespace

CountingTarget CountingTarget::task(pid_t tid, bool inherit, bool enable_on_exec) {
  CountingTarget target;
  target.pid = tid;
  target.options.inherit = inherit;
  target.options.enable_on_exec = enable_on_exec;
  return target;
}

CountingTarget CountingTarget::cgroup(const UniqueFd& directory) {
  CountingTarget target;
  target.pid = directory.get();
  target.options.cgroup = true;
  return target;
}

CountingTarget CountingTarget::removed_under(const UniqueFd& directory) {
  CountingTarget target = cgroup(directory);
  target.removed_descendants = true;
  return target;
}

const CountingBackend& perf_event_backend() {
  static const PerfEventBackend backend;
  return backend;
}

std::size_t CounterLayout::counts() const {
  std::size_t counts = 0;
  for (const auto& unit : units) counts += unit.size();
  return counts;
}

std::vector<std::size_t> CounterLayout::first_counts() const {
  std::vector<std::size_t> first;
  std::size_t counts = 0;
  for (const auto& unit : units) {
    first.push_back(counts);
    counts += unit.size();
  }
  return first;
}

// One unit of one target on one slot: closed (null) while its CPU is offline.
struct CounterSet::Counter {
  std::unique_ptr<OpenUnit> unit;
  GroupReading last;      // the previous reading; empty: counts from the descriptor's zero
  std::size_t index = 0;  // the unit's
  std::size_t slot = 0;
  bool scaled = true;
};

struct CounterSet::Opened {
  std::vector<Counter> counters;
  int error = 0;
  std::vector<int> refused;
};

CounterSet::CounterSet(std::shared_ptr<const CounterLayout> layout, const CountingBackend& backend)
    : layout_(std::move(layout)), backend_(backend), first_(layout_->first_counts()) {
  const std::size_t slots = layout_->slots();
  totals_.counts.assign(layout_->counts() * slots, 0);
  totals_.enabled_ns.assign(layout_->units.size() * slots, 0);
  totals_.running_ns.assign(layout_->units.size() * slots, 0);
  totals_.errors.assign(layout_->units.size() * slots, 0);
}

CounterSet::~CounterSet() = default;

CounterSet::Opened CounterSet::open_target(const CountingTarget& target,
                                           const std::vector<bool>& online, bool partial) const {
  Opened opened;
  const std::size_t slots = layout_->slots();
  for (std::size_t index = 0; index < layout_->units.size(); ++index) {
    for (std::size_t slot = 0; slot < slots; ++slot) {
      const int cpu = layout_->cpus[slot];
      Counter counter{nullptr, {}, index, slot, scales(target, cpu)};
      if (!online.empty() && !online[slot]) {
        opened.counters.push_back(std::move(counter));
        continue;
      }
      auto unit = backend_.open(layout_->units[index], target, cpu);
      if (unit.ok()) {
        counter.unit = std::move(unit.value);
        opened.counters.push_back(std::move(counter));
      } else if (unit.error == ENODEV && layout_->cpus_come_and_go) {
        opened.counters.push_back(std::move(counter));  // went offline since `online` was read
      } else if (partial) {
        opened.refused.resize(layout_->units.size() * slots, 0);
        opened.refused[index * slots + slot] = unit.error;
      } else {
        opened.error = unit.error;
        opened.counters.clear();
        return opened;
      }
    }
  }
  return opened;
}

CounterSet::Opening CounterSet::open(const std::vector<CountingTarget>& targets,
                                     const std::vector<bool>& online, bool partial) {
  Opening opening;
  std::vector<Counter> counters;
  std::size_t gone = 0;
  for (const auto& target : targets) {
    Opened opened = open_target(target, online, partial);
    // A task that ended between its listing and the open has nothing left to count.
    if (opened.error == ESRCH) {
      ++gone;
      continue;
    }
    if (opened.error != 0) return {0, opened.error, {}};
    if (!opened.refused.empty()) {
      opening.refused.resize(opened.refused.size(), 0);
      for (std::size_t at = 0; at < opened.refused.size(); ++at) {
        if (opened.refused[at] != 0) opening.refused[at] = opened.refused[at];
      }
    }
    for (auto& counter : opened.counters) counters.push_back(std::move(counter));
  }
  if (!targets.empty() && gone == targets.size()) return {0, ESRCH, {}};
  std::lock_guard lock(mutex_);
  opening.member = next_member_++;
  members_.emplace(opening.member, std::move(counters));
  return opening;
}

void CounterSet::fold(Counter& counter) {
  if (!counter.unit) return;  // its CPU is offline: its totals stand
  const std::size_t slots = layout_->slots();
  const std::size_t at = counter.index * slots + counter.slot;
  auto reading = counter.unit->read();  // the whole unit in one read(2)
  ++totals_.reads;
  if (!reading.ok()) {
    ++totals_.read_errors;
    totals_.errors[at] = reading.error;
    return;
  }
  const GroupDelta delta = delta_between(counter.last, reading.value);
  counter.last = std::move(reading.value);
  const auto& counts = counter.scaled ? delta.counts : delta.raw_counts;
  for (std::size_t event = 0; event < counts.size(); ++event) {
    totals_.counts[(first_[counter.index] + event) * slots + counter.slot] += counts[event];
  }
  totals_.enabled_ns[at] += delta.enabled_ns;
  totals_.running_ns[at] += delta.running_ns;
}

void CounterSet::close(Member member) {
  std::vector<Counter> closing;
  {
    std::lock_guard lock(mutex_);
    const auto it = members_.find(member);
    if (it == members_.end()) return;
    for (auto& counter : it->second) fold(counter);
    closing = std::move(it->second);
    members_.erase(it);
  }
  // Closed outside the lock: the kernel tears down inherited events on close, which takes time.
}

void CounterSet::discard(Member member) {
  std::vector<Counter> closing;
  std::lock_guard lock(mutex_);
  const auto it = members_.find(member);
  if (it == members_.end()) return;
  closing = std::move(it->second);
  members_.erase(it);
}

CounterSet::Failure CounterSet::reopen(Member member, const CountingTarget& target,
                                       const std::vector<std::size_t>& slots, bool closed_only) {
  const std::size_t width = layout_->slots();
  std::vector<bool> wanted(layout_->units.size() * width, false);  // [unit * slots + slot]
  {
    std::lock_guard lock(mutex_);
    const auto it = members_.find(member);
    if (it == members_.end()) return {};
    for (const auto& counter : it->second) {
      if (closed_only && counter.unit) continue;
      if (std::find(slots.begin(), slots.end(), counter.slot) != slots.end()) {
        wanted[counter.index * width + counter.slot] = true;
      }
    }
  }
  // The new units, opened outside the lock reads take.
  std::map<std::size_t, std::unique_ptr<OpenUnit>> fresh;
  Failure failure;
  for (std::size_t at = 0; at < wanted.size(); ++at) {
    if (!wanted[at]) continue;
    const std::size_t index = at / width;
    const std::size_t slot = at % width;
    auto unit = backend_.open(layout_->units[index], target, layout_->cpus[slot]);
    if (unit.ok()) {
      fresh.emplace(at, std::move(unit.value));
    } else if (failure.error == 0) {
      failure = {unit.error, index, slot};
    }
  }
  std::vector<std::unique_ptr<OpenUnit>> closing;  // the old units, closed after the lock
  std::lock_guard lock(mutex_);
  const auto it = members_.find(member);
  if (it == members_.end()) return failure;
  for (auto& counter : it->second) {
    const auto found = fresh.find(counter.index * width + counter.slot);
    if (found == fresh.end()) continue;
    closing.push_back(std::move(counter.unit));
    counter.unit = std::move(found->second);
    counter.last = {};
    counter.scaled = scales(target, layout_->cpus[counter.slot]);
  }
  return failure;
}

void CounterSet::zero(std::size_t slot) {
  const std::size_t slots = layout_->slots();
  std::lock_guard lock(mutex_);
  for (std::size_t count = 0; count < layout_->counts(); ++count) {
    totals_.counts[count * slots + slot] = 0;
  }
  for (std::size_t index = 0; index < layout_->units.size(); ++index) {
    totals_.enabled_ns[index * slots + slot] = 0;
    totals_.running_ns[index * slots + slot] = 0;
  }
}

CounterTotals CounterSet::read() {
  std::lock_guard lock(mutex_);
  std::fill(totals_.errors.begin(), totals_.errors.end(), 0);
  totals_.descriptors = 0;
  for (auto& [member, counters] : members_) {
    for (auto& counter : counters) {
      fold(counter);
      if (counter.unit) totals_.descriptors += counter.unit->descriptors();
    }
  }
  return totals_;
}

CounterTotals CounterSet::totals() const {
  std::lock_guard lock(mutex_);
  return totals_;
}

std::size_t CounterSet::descriptors() const {
  std::lock_guard lock(mutex_);
  std::size_t count = 0;
  for (const auto& [member, counters] : members_) {
    for (const auto& counter : counters) {
      if (counter.unit) count += counter.unit->descriptors();
    }
  }
  return count;
}

}  // namespace hwperf::perf
