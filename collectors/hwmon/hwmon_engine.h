// Turns meter readings into monotonic joules: counted energy as the chip counts it (wraps and
// resets handled, integration.h), power readings integrated over CLOCK_MONOTONIC time between two
// reads, and each sensor's state. It is ticked by the collector's own thread, never by a scrape:
// a read can block as long as the driver does (an IPMI round trip, a mailbox timeout), and a
// scrape only copies what the last tick folded.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "collectors/hwmon/integration.h"
#include "collectors/hwmon/sensor_source.h"
#include "common/enum_names.h"

namespace hwperf::hwmon {

// Why a sensor's joules are not growing, or `ok`. One table spells them for the metric and log.
enum class State { ok, gone, no_data, io_error, garbage, stale };
inline constexpr EnumName<State> kStateNames[] = {
    {State::ok, "ok"},           {State::gone, "gone"},
    {State::no_data, "no_data"}, {State::io_error, "io_error"},
    {State::garbage, "garbage"}, {State::stale, "stale"}};
inline const char* to_string(State state) { return name_of(kStateNames, state); }

// The state a read failing with `error` leaves a sensor in: ENOENT, ENODEV, ENXIO: gone (the
// device was removed); ENODATA: no_data (hwmon's answer for a disabled sensor or invalid data);
// EINVAL (no number), ENOTSUP (not a regular file), ELOOP (a link), EFBIG: garbage; any other:
// io_error (EIO, ETIMEDOUT, EAGAIN, ...).
State state_of_error(int error);

struct SensorTally {
  EnergyTotal energy;
  State state = State::ok;
  std::uint64_t read_errors = 0;
  std::uint64_t wraps = 0;        // counters: 32-bit wraps accounted for
  double unmeasured_seconds = 0;  // time whose energy is not in `energy`, and will not be
};

struct EngineSettings {
  double interval_seconds = 1;
  double stale_after_seconds = 300;  // 0: never
};

// Two power readings further apart than this (the sensor failed, or the process was stopped in
// between) are not integrated: what the power did meanwhile is not known. Five ticks, and at
// least five seconds, so that a tick delayed on a loaded machine is still bridged.
double max_bridged_seconds(double interval_seconds);

class HwmonEngine {
 public:
  using Clock = std::chrono::steady_clock;  // CLOCK_MONOTONIC
  using NowFn = std::function<Clock::time_point()>;
  // Reads every sensor once: the baselines, from which energy counts.
  HwmonEngine(std::unique_ptr<SensorSource> source, EngineSettings settings,
              NowFn now = &Clock::now);

  // Reads every sensor, then folds the readings under the lock a snapshot takes: a scrape never
  // waits for a read. One tick at a time.
  void tick();
  std::vector<SensorTally> snapshot() const;
  const std::vector<SensorSpec>& sensors() const { return source_->sensors(); }
  const EngineSettings& settings() const { return settings_; }

 private:
  struct Track {
    bool primed = false;  // a good reading has been taken
    std::int64_t previous = 0;
    Clock::time_point previous_at{};
    Clock::time_point changed_at{};  // when the reading last differed from the one before
    unsigned logged = 0;             // bit per State: logged once each
    bool loss_logged = false;
  };
  void fold(std::size_t index, const OrErrno<std::int64_t>& reading, Clock::time_point at);
  void fold_good(std::size_t index, std::int64_t value, Clock::time_point at);
  void fold_counter(std::size_t index, std::int64_t value, double elapsed);
  void fold_power(std::size_t index, std::int64_t value, double elapsed, bool stale);
  void enter(std::size_t index, State state, const std::string& why);
  void lose(std::size_t index, double seconds, const std::string& why);

  std::mutex tick_mutex_;
  mutable std::mutex mutex_;  // tracks_ and tallies_
  std::unique_ptr<SensorSource> source_;
  EngineSettings settings_;
  NowFn now_;
  std::vector<Track> tracks_;
  std::vector<SensorTally> tallies_;
};

}  // namespace hwperf::hwmon
