// A fake counting backend (collectors/perf/counter_set.h) whose counters read what the test
// writes on a board, per (target pid, CPU, unit's first event config): the counter set's unit
// tests, and collectors built over it (containers, process targets) without the kernel's perf.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "collectors/perf/counted_events.h"
#include "collectors/perf/counter_set.h"

namespace hwperf::test {

// What the fake backend's counters read, written by the test: per (target pid, CPU, unit's first
// event config), a reading or an errno; and what opening one there answers.
struct FakeCounterBoard {
  using Key = std::tuple<pid_t, int, std::uint64_t>;
  std::map<Key, perf::GroupReading> readings;
  std::map<Key, int> read_errors;
  std::map<Key, int> open_errors;
  int opened = 0;
  int live = 0;  // units open now
  // What a counter nobody wrote reads: zeros, or with `derived`, counts made from its key (the
  // same at every read), distinct per target, CPU and event.
  bool derived = false;
  perf::GroupReading unwritten(const Key& key, std::size_t events) const {
    perf::GroupReading reading;
    if (!derived) return reading;
    const auto seed = static_cast<std::uint64_t>(std::get<0>(key) + 7) * 1000003u +
                      static_cast<std::uint64_t>(std::get<1>(key) + 2) * 1009u + std::get<2>(key);
    reading.enabled_ns = seed * 1000;
    reading.running_ns = seed * 1000;
    for (std::size_t e = 0; e < events; ++e) reading.values.push_back(seed * (e + 1));
    return reading;
  }
};

class FakeCountedUnit final : public perf::OpenUnit {
 public:
  FakeCountedUnit(FakeCounterBoard& board, FakeCounterBoard::Key key, std::size_t events)
      : board_(board), key_(key), events_(events) {
    ++board_.live;
  }
  ~FakeCountedUnit() override { --board_.live; }
  OrErrno<perf::GroupReading> read() override {
    if (const auto error = board_.read_errors.find(key_); error != board_.read_errors.end()) {
      return {{}, error->second};
    }
    const auto found = board_.readings.find(key_);
    perf::GroupReading reading =
        found != board_.readings.end() ? found->second : board_.unwritten(key_, events_);
    reading.values.resize(events_, 0);
    return {reading, 0};
  }
  std::size_t descriptors() const override { return events_; }

 private:
  FakeCounterBoard& board_;
  FakeCounterBoard::Key key_;
  std::size_t events_;
};

class FakeCountingBackend final : public perf::CountingBackend {
 public:
  explicit FakeCountingBackend(FakeCounterBoard& board) : board_(board) {}
  OrErrno<std::unique_ptr<perf::OpenUnit>> open(const std::vector<perf::EventEncoding>& events,
                                                const perf::CountingTarget& target,
                                                int cpu) const override {
    const FakeCounterBoard::Key key{target.pid, cpu, events.front().config};
    if (const auto error = board_.open_errors.find(key); error != board_.open_errors.end()) {
      return {nullptr, error->second};
    }
    ++board_.opened;
    return {std::make_unique<FakeCountedUnit>(board_, key, events.size()), 0};
  }

 private:
  FakeCounterBoard& board_;
};

// An event a collector counts over the fake backend, its family named hwperf_<prefix>_<metric>
// (_total), its first config `config`: what the fake board's readings are keyed by.
inline perf::CountedEvent counted_event(const char* prefix, const char* event, const char* metric,
                                        std::uint64_t config,
                                        events::Unit unit = events::Unit::count) {
  perf::CountedEvent counted;
  counted.event = event;
  counted.metric = metric;
  counted.family = std::string("hwperf_") + prefix + "_" + metric + "_total";
  counted.help = std::string("Test event ") + event;
  counted.unit = unit;
  counted.encoding.name = event;
  counted.encoding.config = config;
  return counted;
}

}  // namespace hwperf::test
