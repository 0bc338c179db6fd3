// The fake counter source the PAPI collector tests share: counts every (event, CPU) of the layout
// it is given, with failures, resets and rebuilds the test switches on.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "collectors/papi/papi_collector.h"
#include "config/config.h"
#include "tests/support/support.h"

namespace hwperf::test::papi_fakes {

// The PAPI unit tests' prelude: `using namespace hwperf::test::papi_fakes;` brings these too.
using events::ExportedEvent;
using papi::CounterSource;
using papi::SourceLayout;
using test::find_samples;
using test::parse_exposition;
using test::Sample;
using test::scrape;
using test::two_socket_topology;
using test::value_of;

inline ExportedEvent spec(const std::string& event, const std::string& metric,
                          events::Unit unit = events::Unit::count) {
  ExportedEvent s;
  s.event = event;
  s.metric = metric;
  s.description = "Test event " + event;
  s.unit = unit;
  return s;
}

// Counts every (event, CPU) of the layout it is given; values are set by the test.
class FakeCounterSource final : public CounterSource {
 public:
  explicit FakeCounterSource(SourceLayout layout) : layout_(std::move(layout)) {
    values_.assign(layout_.counters.size(), 0);
    base_.assign(layout_.counters.size(), 0);
  }
  const SourceLayout& layout() const override { return layout_; }
  void read(std::vector<std::int64_t>& values, std::vector<std::string>& failures) override {
    if (fail_) throw std::runtime_error("fake source: read failed");
    std::lock_guard<std::mutex> lock(sets_mutex_);
    ++reads_;
    for (auto& value : values_) value += step_;
    for (std::size_t s = 0; s < layout_.event_sets.size(); ++s) {
      if (failing_sets_.count(s) != 0) {
        failures[s] = "PAPI_read failed: fake failure";
        continue;
      }
      failures[s].clear();
      for (std::size_t i : layout_.event_sets[s].counters) {
        values[i] = static_cast<std::int64_t>(values_[i] - base_[i]);
      }
    }
  }
  // What PAPI_reset does: the set's counts start again from zero.
  std::string reset(std::size_t set) override {
    ++resets_;
    if (reset_fails_) return "fake reset failure";
    for (std::size_t i : layout_.event_sets[set].counters) base_[i] = values_[i];
    return {};
  }
  // What rebuilding does: a set that failed reads again, from zero.
  std::string rebuild(std::size_t set) override {
    std::lock_guard<std::mutex> lock(sets_mutex_);
    ++restarts_;
    if (restart_fails_) return "fake rebuild failure";
    failing_sets_.erase(set);
    reset(set);
    return {};
  }
  // The maintenance thread rebuilds while the test changes what fails.
  void set_failing(std::set<std::size_t> sets) {
    std::lock_guard<std::mutex> lock(sets_mutex_);
    failing_sets_ = std::move(sets);
  }
  bool any_failing() {
    std::lock_guard<std::mutex> lock(sets_mutex_);
    return !failing_sets_.empty();
  }

  std::vector<std::uint64_t> values_;
  std::vector<std::uint64_t> base_;
  std::uint64_t step_ = 0;
  std::atomic<bool> fail_{false};
  std::atomic<int> reads_{0};
  std::set<std::size_t> failing_sets_;  // guarded by sets_mutex_ once a collector runs
  std::atomic<bool> restart_fails_{false};
  std::atomic<bool> reset_fails_{false};
  std::atomic<int> resets_{0};
  std::atomic<int> restarts_{0};

 private:
  std::mutex sets_mutex_;
  SourceLayout layout_;
};

inline PapiCollectorConfig config_with(Granularity granularity) {
  PapiCollectorConfig config;
  config.granularity = granularity;
  return config;
}

}  // namespace hwperf::test::papi_fakes
