#include "collectors/papi/papi_group_source.h"

#include <algorithm>
#include <cerrno>
#include <map>

#include "collectors/papi/papi_remedies.h"
#include "common/text.h"

namespace hwperf::papi {
namespace {

std::int64_t clamped(std::uint64_t total) {
  return static_cast<std::int64_t>(std::min(total, static_cast<std::uint64_t>(INT64_MAX)));
}

std::string open_text(const GroupOpening& group, unsigned cpu, int error) {
  return "perf_event_open of group " + group.name + " on CPU " + std::to_string(cpu) + ": " +
         errno_text(error);
}

}  // namespace

GroupSource::GroupSource(const std::vector<GroupOpening>& groups, const std::vector<unsigned>& cpus,
                         const PathsConfig& paths)
    : groups_(groups) {
  std::vector<perf::CounterSet::Opening> openings;  // per group
  for (const auto& group : groups_) {
    auto layout = std::make_shared<perf::CounterLayout>();
    layout->units = {group.encodings};
    for (unsigned cpu : cpus) layout->cpus.push_back(static_cast<int>(cpu));
    Counted counted;
    counted.counters = std::make_unique<perf::CounterSet>(std::move(layout));
    openings.push_back(counted.counters->open({perf::CountingTarget::every_task()}, {}, true));
    counted.member = openings.back().member;
    counted_.push_back(std::move(counted));
  }
  sets_.reserve(groups_.size() * cpus.size());
  for (std::size_t slot = 0; slot < cpus.size(); ++slot) {
    const unsigned cpu = cpus[slot];
    unsigned index = 0;
    for (std::size_t g = 0; g < groups_.size(); ++g) {
      const GroupOpening& group = groups_[g];
      const auto& refused = openings[g].refused;
      if (!refused.empty() && refused[slot] != 0) {
        // The group was opened on one CPU at startup (papi_groups.cpp); failing on another is
        // that CPU's state (offline, taken), dropped there like a PAPI event.
        const int error = refused[slot];
        const std::string remedy = error == EACCES || error == EPERM
                                       ? permission_remedy(paths.procfs)
                                       : "check that CPU " + std::to_string(cpu) + " is online";
        for (std::size_t k = 0; k < group.encodings.size(); ++k) {
          layout_.dropped.push_back({group.first_event + k, cpu, errno_text(error),
                                     remedy + " (" + open_text(group, cpu, error) + ")"});
        }
        continue;
      }
      Set set;
      set.group = g;
      set.slot = slot;
      set.cpu = cpu;
      EventSetInfo info;
      info.cpu = cpu;
      info.index = index++;
      info.binding = "perf_group";
      // Scaled per read interval by the group's running share, like the perf sets: the
      // collector zeroes large totals the same way.
      info.multiplexed = true;
      info.kernel_group = true;
      for (std::size_t k = 0; k < group.encodings.size() + 2; ++k) {
        set.slots.push_back(layout_.counters.size());
        info.counters.push_back(layout_.counters.size());
        layout_.counters.push_back({group.first_event + k, cpu});
      }
      layout_.event_sets.push_back(std::move(info));
      sets_.push_back(std::move(set));
    }
  }
}

void GroupSource::read(std::vector<std::int64_t>& values, std::vector<std::string>& failures) {
  std::vector<perf::CounterTotals> totals;  // per group: each read once
  totals.reserve(counted_.size());
  for (auto& counted : counted_) totals.push_back(counted.counters->read());
  for (std::size_t s = 0; s < sets_.size(); ++s) {
    const Set& set = sets_[s];
    const perf::CounterTotals& group = totals[set.group];
    const std::size_t slots = counted_[set.group].counters->layout().slots();
    if (const int error = group.errors[set.slot]; error != 0) {
      failures[s] = "read of perf group " + groups_[set.group].name + ": " + errno_text(error);
      continue;
    }
    failures[s].clear();
    const std::size_t members = groups_[set.group].encodings.size();
    for (std::size_t k = 0; k < members; ++k) {
      values[set.slots[k]] = clamped(group.counts[k * slots + set.slot]);
    }
    values[set.slots[members]] = clamped(group.enabled_ns[set.slot]);
    values[set.slots[members + 1]] = clamped(group.running_ns[set.slot]);
  }
}

std::uint64_t GroupSource::group_reads() const {
  std::uint64_t reads = 0;
  for (const auto& counted : counted_) reads += counted.counters->totals().reads;
  return reads;
}

std::string GroupSource::reset(std::size_t set) {
  // Totals are kept by the counter set, never scaled by a lifetime share: zeroing them is all.
  const Set& reset = sets_.at(set);
  counted_[reset.group].counters->zero(reset.slot);
  return {};
}

// New descriptors (the CPU came back, or a read failed): the kernel never re-adds the events of
// a CPU that went offline (papi_source.cpp, rebuild); counts start again from zero.
std::string GroupSource::rebuild(std::size_t index) {
  const Set& set = sets_.at(index);
  Counted& counted = counted_[set.group];
  const auto failure =
      counted.counters->reopen(counted.member, perf::CountingTarget::every_task(), {set.slot});
  if (failure.error != 0) return open_text(groups_[set.group], set.cpu, failure.error);
  counted.counters->zero(set.slot);
  return {};
}

namespace {

class JoinedSource final : public CounterSource {
 public:
  JoinedSource(std::unique_ptr<CounterSource> first, std::unique_ptr<CounterSource> second)
      : first_(std::move(first)), second_(std::move(second)) {
    const auto& a = first_->layout();
    const auto& b = second_->layout();
    layout_ = a;
    std::map<unsigned, unsigned> sets_on_cpu;
    for (const auto& set : a.event_sets)
      sets_on_cpu[set.cpu] = std::max(sets_on_cpu[set.cpu], set.index + 1);
    const std::size_t offset = a.counters.size();
    layout_.counters.insert(layout_.counters.end(), b.counters.begin(), b.counters.end());
    layout_.dropped.insert(layout_.dropped.end(), b.dropped.begin(), b.dropped.end());
    layout_.notes.insert(layout_.notes.end(), b.notes.begin(), b.notes.end());
    for (auto set : b.event_sets) {
      set.index += sets_on_cpu[set.cpu];
      for (auto& counter : set.counters) counter += offset;
      layout_.event_sets.push_back(std::move(set));
    }
    first_values_.assign(a.counters.size(), 0);
    second_values_.assign(b.counters.size(), 0);
    first_failures_.assign(a.event_sets.size(), {});
    second_failures_.assign(b.event_sets.size(), {});
  }

  const SourceLayout& layout() const override { return layout_; }

  void read(std::vector<std::int64_t>& values, std::vector<std::string>& failures) override {
    first_->read(first_values_, first_failures_);
    second_->read(second_values_, second_failures_);
    std::copy(first_values_.begin(), first_values_.end(), values.begin());
    std::copy(second_values_.begin(), second_values_.end(),
              values.begin() + static_cast<std::ptrdiff_t>(first_values_.size()));
    std::copy(first_failures_.begin(), first_failures_.end(), failures.begin());
    std::copy(second_failures_.begin(), second_failures_.end(),
              failures.begin() + static_cast<std::ptrdiff_t>(first_failures_.size()));
  }

  std::string reset(std::size_t set) override {
    const std::size_t split = first_failures_.size();
    return set < split ? first_->reset(set) : second_->reset(set - split);
  }

  std::string rebuild(std::size_t set) override {
    const std::size_t split = first_failures_.size();
    return set < split ? first_->rebuild(set) : second_->rebuild(set - split);
  }

 private:
  std::unique_ptr<CounterSource> first_;
  std::unique_ptr<CounterSource> second_;
  SourceLayout layout_;
  // Each source's own view, kept between reads: a failed set's values stay as they were.
  std::vector<std::int64_t> first_values_;
  std::vector<std::int64_t> second_values_;
  std::vector<std::string> first_failures_;
  std::vector<std::string> second_failures_;
};

}  // namespace

std::unique_ptr<CounterSource> join_sources(std::unique_ptr<CounterSource> first,
                                            std::unique_ptr<CounterSource> second) {
  return std::make_unique<JoinedSource>(std::move(first), std::move(second));
}

}  // namespace hwperf::papi
