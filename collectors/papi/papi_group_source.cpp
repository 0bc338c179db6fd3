#include "collectors/papi/papi_group_source.h"

#include <algorithm>
#include <cerrno>
#include <map>

#include "collectors/papi/papi_remedies.h"
#include "common/text.h"

namespace hwperf::papi {
namespace {

constexpr auto kMaxValue = static_cast<std::uint64_t>(INT64_MAX);

std::string open_text(const GroupOpening& group, unsigned cpu, int error) {
  return "perf_event_open of group " + group.name + " on CPU " + std::to_string(cpu) + ": " +
         errno_text(error);
}

}  // namespace

GroupSource::GroupSource(const std::vector<GroupOpening>& groups, const std::vector<unsigned>& cpus,
                         const PathsConfig& paths)
    : groups_(groups) {
  sets_.reserve(groups_.size() * cpus.size());
  for (unsigned cpu : cpus) {
    unsigned index = 0;
    for (const auto& group : groups_) {
      auto opened = perf::CounterGroup::open(group.encodings, -1, static_cast<int>(cpu));
      if (!opened.ok()) {
        // The group was opened on one CPU at startup (papi_groups.cpp); failing on another is
        // that CPU's state (offline, taken), dropped there like a PAPI event.
        const std::string remedy = opened.error == EACCES || opened.error == EPERM
                                       ? permission_remedy(paths.procfs)
                                       : "check that CPU " + std::to_string(cpu) + " is online";
        for (std::size_t k = 0; k < group.encodings.size(); ++k) {
          layout_.dropped.push_back({group.first_event + k, cpu, errno_text(opened.error),
                                     remedy + " (" + open_text(group, cpu, opened.error) + ")"});
        }
        continue;
      }
      Set set;
      set.group = &group;
      set.cpu = cpu;
      set.counters = std::move(opened.value);
      set.totals.assign(group.encodings.size() + 2, 0);
      EventSetInfo info;
      info.cpu = cpu;
      info.index = index++;
      info.binding = "perf_group";
      // Scaled per read interval by the group's running share, like the perf sets: the
      // collector zeroes large totals the same way.
      info.multiplexed = true;
      info.kernel_group = true;
      for (std::size_t k = 0; k < set.totals.size(); ++k) {
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
  for (std::size_t s = 0; s < sets_.size(); ++s) {
    Set& set = sets_[s];
    ++group_reads_;
    const auto reading = set.counters.read();
    if (!reading.ok()) {
      failures[s] = "read of perf group " + set.group->name + ": " + errno_text(reading.error);
      continue;
    }
    failures[s].clear();
    const auto delta = perf::delta_between(set.last, reading.value);
    const std::size_t members = delta.counts.size();
    for (std::size_t k = 0; k < members; ++k) set.totals[k] += delta.counts[k];
    set.totals[members] += delta.enabled_ns;
    set.totals[members + 1] += delta.running_ns;
    set.last = reading.value;
    for (std::size_t k = 0; k < set.totals.size(); ++k) {
      values[set.slots[k]] = static_cast<std::int64_t>(std::min(set.totals[k], kMaxValue));
    }
  }
}

std::string GroupSource::reset(std::size_t set) {
  // Totals are kept here, never scaled by a lifetime share: zeroing them is all.
  std::fill(sets_.at(set).totals.begin(), sets_.at(set).totals.end(), 0);
  return {};
}

// New descriptors (the CPU came back, or a read failed): the kernel never re-adds the events of
// a CPU that went offline (papi_source.cpp, rebuild); counts start again from zero.
std::string GroupSource::rebuild(std::size_t index) {
  Set& set = sets_.at(index);
  auto opened = perf::CounterGroup::open(set.group->encodings, -1, static_cast<int>(set.cpu));
  if (!opened.ok()) return open_text(*set.group, set.cpu, opened.error);
  set.counters = std::move(opened.value);
  set.last = {};
  std::fill(set.totals.begin(), set.totals.end(), 0);
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
