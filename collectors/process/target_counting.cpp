#include "collectors/process/target_counting.h"

#include <cerrno>
#include <utility>

namespace hwperf::process {

TargetCounting::TargetCounting(std::vector<std::vector<perf::EventEncoding>> units,
                               std::vector<int> cpus)
    : units_(std::move(units)), cpus_(std::move(cpus)) {
  scale_ = cpus_.size() == 1 && cpus_[0] == -1;
  std::size_t counts = 0;
  for (const auto& unit : units_) {
    first_.push_back(counts);
    counts += unit.size();
  }
  totals_.counts.assign(counts * cpus_.size(), 0);
  totals_.enabled_ns.assign(units_.size(), 0);
  totals_.running_ns.assign(units_.size(), 0);
}

int TargetCounting::attach(const ProcessIdentity& process, const std::vector<pid_t>& threads,
                           const perf::OpenOptions& options) {
  std::vector<Counter> counters;
  counters.reserve(threads.size() * units_.size() * cpus_.size());
  for (const pid_t thread : threads) {
    std::vector<Counter> of_thread;
    int thread_error = 0;
    for (std::size_t unit = 0; unit < units_.size() && thread_error == 0; ++unit) {
      for (std::size_t slot = 0; slot < cpus_.size(); ++slot) {
        auto opened = perf::CounterGroup::open(units_[unit], thread, cpus_[slot], options);
        if (!opened.ok()) {
          thread_error = opened.error;
          break;
        }
        of_thread.push_back({std::move(opened.value), {}, unit, slot});
      }
    }
    // A thread that ended between the listing and the open has nothing left to count.
    if (thread_error == ESRCH) continue;
    if (thread_error != 0) return thread_error;
    for (auto& counter : of_thread) counters.push_back(std::move(counter));
  }
  if (counters.empty() && !threads.empty()) return ESRCH;
  std::lock_guard lock(mutex_);
  auto& slot = roots_[process];
  for (auto& counter : counters) slot.push_back(std::move(counter));
  return 0;
}

void TargetCounting::fold(std::vector<Counter>& counters) {
  const std::size_t slots = cpus_.size();
  for (auto& counter : counters) {
    auto reading = counter.group.read();  // the whole group in one read(2)
    if (!reading.ok()) {
      ++totals_.read_errors;
      continue;
    }
    const perf::GroupDelta delta = perf::delta_between(counter.last, reading.value);
    counter.last = std::move(reading.value);
    const auto& counts = scale_ ? delta.counts : delta.raw_counts;
    for (std::size_t event = 0; event < counts.size(); ++event) {
      totals_.counts[(first_[counter.unit] + event) * slots + counter.slot] += counts[event];
    }
    totals_.enabled_ns[counter.unit] += delta.enabled_ns;
    totals_.running_ns[counter.unit] += delta.running_ns;
  }
}

void TargetCounting::detach(const ProcessIdentity& process) {
  std::vector<Counter> closing;
  {
    std::lock_guard lock(mutex_);
    const auto it = roots_.find(process);
    if (it == roots_.end()) return;
    fold(it->second);
    closing = std::move(it->second);
    roots_.erase(it);
  }
  // Closed outside the lock: the kernel tears down inherited events on close, which takes time.
}

void TargetCounting::discard(const ProcessIdentity& process) {
  std::vector<Counter> closing;
  std::lock_guard lock(mutex_);
  const auto it = roots_.find(process);
  if (it == roots_.end()) return;
  closing = std::move(it->second);
  roots_.erase(it);
}

CountTotals TargetCounting::read() {
  std::lock_guard lock(mutex_);
  for (auto& [identity, counters] : roots_) fold(counters);
  return totals_;
}

std::size_t TargetCounting::open_descriptors() const {
  std::lock_guard lock(mutex_);
  std::size_t count = 0;
  for (const auto& [identity, counters] : roots_) {
    for (const auto& counter : counters) count += counter.group.size();
  }
  return count;
}

}  // namespace hwperf::process
