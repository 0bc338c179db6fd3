// Turns raw readings from an EnergySource into monotonic per-series totals: one lock, one
// accumulator per exported series, fed both by scrapes and by the wrap guard (the one background
// activity the exporter has), plus the choice of power ceilings and the guard's period.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "collectors/rapl/energy.h"
#include "collectors/rapl/energy_source.h"

namespace hwperf::rapl {

// No shipping CPU package draws 1000 W (the largest are ~500 W), so without a figure from the
// hardware or the configuration this is both a safe rate for the guard and a generous limit
// for rejecting deltas.
inline constexpr double kDefaultPackageWatts = 1000;
// A power-limit register or constraint is what the package is asked to sustain; bursts (PL2,
// PL4) go above it, so the ceiling taken from the hardware is this many times its largest figure.
inline constexpr double kHardwareHintFactor = 4;

struct PowerCeilings {
  std::map<unsigned, double> package_watts;  // every topology package
  double psys_watts = 0;                     // the whole platform
  std::string origin;                        // "configured", "hardware" or "default", for logs
};

// Config max_power_watts when > 0; else kHardwareHintFactor * the hardware's largest figure per
// package (figures under 1 W are ignored as bogus); else kDefaultPackageWatts. psys covers the
// whole platform, so its ceiling is twice the sum over packages.
PowerCeilings choose_power_ceilings(double configured_watts,
                                    const std::map<unsigned, double>& hardware_hints,
                                    const std::vector<unsigned>& packages);
double counter_ceiling(const CounterInfo& counter, const PowerCeilings& ceilings);

// The guard reads every counter at least 4 times per shortest wrap time at the ceiling, so that
// a late wake-up (scheduling, a slow sysfs read) still leaves it well ahead of the wrap.
inline constexpr double kGuardSafetyFactor = 4;
inline constexpr double kGuardMinSeconds = 0.05;  // below this the guard would cost real CPU
inline constexpr double kGuardMaxSeconds = 60;    // cap: keeps the guard observable

struct GuardPlan {
  bool needed = false;          // false only when no counter has a range (energy.h)
  double interval_seconds = 0;  // what the guard uses
  double derived_seconds = 0;   // what the counters and ceilings call for (before clamping)
  bool configured = false;      // interval_seconds came from wrap_guard_interval_seconds
};
GuardPlan plan_wrap_guard(const std::vector<CounterInfo>& counters,
                          const std::vector<double>& counter_ceilings, double configured_seconds);

struct SeriesKey {
  Domain domain = Domain::package;
  std::optional<unsigned> package;
  std::optional<unsigned> die;
  bool operator<(const SeriesKey& other) const;
  bool operator==(const SeriesKey& other) const;
};

// A counter that has not changed at all this long after startup is not measuring: real RAPL
// counters tick every ~1 ms (an idle package still draws watts, and one unit is at most 61 uJ),
// while some hypervisors expose a RAPL event (perf energy-psys) that always reads 0.
inline constexpr double kFrozenAfterSeconds = 5;

struct SeriesSnapshot {
  SeriesKey key;
  Tally tally;
  // Every counter of the series has read the same value since startup, for at least
  // kFrozenAfterSeconds: its energy is no measurement. Cleared for good once one moves.
  bool frozen = false;
};

class RaplEngine {
 public:
  using NowFn = std::function<Clock::time_point()>;
  // `counter_ceilings` (watts) has one entry per source counter. Reads every counter once to
  // set the baselines: energy is counted from here on.
  RaplEngine(std::unique_ptr<EnergySource> source, std::vector<double> counter_ceilings,
             NowFn now = &Clock::now);

  // Reads every counter and folds the deltas. Thread-safe; a failed read is counted and leaves
  // that counter's baseline where it was, so the energy arrives with the next good read.
  void sample();
  // sample() and a copy of every series, taken under one lock so a scrape is consistent.
  std::vector<SeriesSnapshot> snapshot();
  // The series snapshot() returns, in its order, without reading: fixed when the engine is built.
  std::vector<SeriesKey> series_keys();

  const EnergySource& source() const { return *source_; }

 private:
  struct Counter {
    std::size_t series = 0;
    double max_watts = 0;
    CounterState state;
    bool error_logged = false;
    std::optional<std::uint64_t> first_value;  // the first good reading
    Clock::time_point first_read{};
    bool moved = false;          // a reading has differed from first_value
    bool frozen_logged = false;  // the "not moving" line was logged
  };
  void sample_locked();
  void track_movement(std::size_t index, std::uint64_t value, Clock::time_point now);
  bool counter_frozen(const Counter& counter, Clock::time_point now) const;

  std::mutex mutex_;
  std::unique_ptr<EnergySource> source_;
  NowFn now_;
  std::vector<Counter> counters_;
  std::vector<SeriesSnapshot> series_;
};

// Calls `tick` every `interval` on a thread of its own until destroyed. The destructor wakes the
// thread at once (no waiting out the interval) and joins it.
class WrapGuard {
 public:
  WrapGuard(std::chrono::duration<double> interval, std::function<void()> tick);
  ~WrapGuard() noexcept;
  WrapGuard(const WrapGuard&) = delete;
  WrapGuard& operator=(const WrapGuard&) = delete;

 private:
  void run();

  std::chrono::duration<double> interval_;
  std::function<void()> tick_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;  // last: started once everything above exists
};

}  // namespace hwperf::rapl
