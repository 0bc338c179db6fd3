#include "collectors/hwmon/hwmon_engine.h"

#include <algorithm>
#include <cerrno>
#include <utility>

#include "common/log.h"
#include "common/text.h"

namespace hwperf::hwmon {
namespace {

double seconds_between(HwmonEngine::Clock::time_point from, HwmonEngine::Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

unsigned state_bit(State state) { return 1u << static_cast<unsigned>(state); }

}  // namespace

State state_of_error(int error) {
  switch (error) {
    case ENOENT:
    case ENODEV:
    case ENXIO: return State::gone;
    case ENODATA: return State::no_data;
    case EINVAL:
    case ENOTSUP:
    case ELOOP:
    case EFBIG: return State::garbage;
    default: return State::io_error;
  }
}

double max_bridged_seconds(double interval_seconds) { return std::max(5 * interval_seconds, 5.0); }

HwmonEngine::HwmonEngine(std::unique_ptr<SensorSource> source, EngineSettings settings, NowFn now)
    : source_(std::move(source)), settings_(settings), now_(std::move(now)) {
  tracks_.resize(source_->sensors().size());
  tallies_.resize(source_->sensors().size());
  tick();
}

void HwmonEngine::tick() {
  const std::lock_guard<std::mutex> ticking(tick_mutex_);
  std::vector<std::pair<OrErrno<std::int64_t>, Clock::time_point>> readings;
  readings.reserve(tracks_.size());
  for (std::size_t i = 0; i < tracks_.size(); ++i) {
    auto value = source_->read(i);
    readings.emplace_back(value, now_());
  }
  const std::lock_guard<std::mutex> lock(mutex_);
  for (std::size_t i = 0; i < readings.size(); ++i) fold(i, readings[i].first, readings[i].second);
}

std::vector<SensorTally> HwmonEngine::snapshot() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return tallies_;
}

void HwmonEngine::fold(std::size_t index, const OrErrno<std::int64_t>& reading,
                       Clock::time_point at) {
  const SensorSpec& spec = source_->sensors()[index];
  if (!reading.ok()) {
    ++tallies_[index].read_errors;
    enter(index, state_of_error(reading.error), errno_text(reading.error));
    return;
  }
  if (spec.source == Source::integrated && !plausible_power(reading.value)) {
    ++tallies_[index].read_errors;
    enter(index, State::garbage,
          "read " + std::to_string(reading.value) + " uW, which no meter gives (0 to " +
              format_number(kMaxPlausibleWatts) + " W)");
    return;
  }
  fold_good(index, reading.value, at);
}

void HwmonEngine::fold_good(std::size_t index, std::int64_t value, Clock::time_point at) {
  Track& track = tracks_[index];
  if (!track.primed) {
    track = Track{true, value, at, at, track.logged, track.loss_logged};
    enter(index, State::ok, "");
    return;
  }
  const double elapsed = seconds_between(track.previous_at, at);
  if (value != track.previous) track.changed_at = at;
  const bool stale = settings_.stale_after_seconds > 0 && value == track.previous &&
                     seconds_between(track.changed_at, at) > settings_.stale_after_seconds;
  if (source_->sensors()[index].source == Source::counter) {
    fold_counter(index, value, elapsed);
  } else {
    fold_power(index, value, elapsed, stale);
  }
  track.previous = value;
  track.previous_at = at;
  enter(index, stale ? State::stale : State::ok,
        stale ? "has read " + std::to_string(value) + " for more than " +
                    format_number(settings_.stale_after_seconds) + " s"
              : "");
}

void HwmonEngine::fold_counter(std::size_t index, std::int64_t value, double elapsed) {
  SensorTally& tally = tallies_[index];
  const CounterStep step = counter_step(tracks_[index].previous, value, elapsed);
  switch (step.step) {
    case Step::added:
    case Step::wrapped:
      tally.energy.microjoules += step.microjoules;
      if (step.step == Step::wrapped) ++tally.wraps;
      break;
    case Step::reset:
      lose(index, elapsed,
           "went back from " + std::to_string(tracks_[index].previous) + " to " +
               std::to_string(value) + " uJ (the chip started counting again)");
      break;
    case Step::implausible:
      lose(index, elapsed,
           "rose from " + std::to_string(tracks_[index].previous) + " to " + std::to_string(value) +
               " uJ in " + format_number(elapsed) + " s, more than " +
               format_number(kMaxPlausibleWatts) + " W");
      break;
  }
}

void HwmonEngine::fold_power(std::size_t index, std::int64_t value, double elapsed, bool stale) {
  SensorTally& tally = tallies_[index];
  if (stale || tally.state == State::stale) {
    // Stuck, or moving again after being stuck: what it read meanwhile measured nothing.
    tally.unmeasured_seconds += elapsed;
  } else if (elapsed > max_bridged_seconds(settings_.interval_seconds)) {
    lose(index, elapsed,
         "two readings " + format_number(elapsed) + " s apart (more than " +
             format_number(max_bridged_seconds(settings_.interval_seconds)) + " s)");
  } else {
    tally.energy.integrated_joules += trapezoid_joules(tracks_[index].previous, value, elapsed);
  }
}

// Energy of `seconds` that cannot be known: counted as unmeasured time, logged the first time.
void HwmonEngine::lose(std::size_t index, double seconds, const std::string& why) {
  tallies_[index].unmeasured_seconds += seconds;
  Track& track = tracks_[index];
  if (track.loss_logged) return;
  track.loss_logged = true;
  log::warn("hwmon: " + source_->sensors()[index].path + ": " + why + "; its energy over " +
            format_number(seconds) +
            " s is not counted (hwperf_hwmon_unmeasured_seconds_total; logged once)");
}

// Each state is logged the first time a sensor enters it, so a sensor that keeps failing and
// recovering does not flood the log; the metric follows every change.
void HwmonEngine::enter(std::size_t index, State state, const std::string& why) {
  SensorTally& tally = tallies_[index];
  Track& track = tracks_[index];
  const State before = tally.state;
  tally.state = state;
  if (state == before || (track.logged & state_bit(state)) != 0) return;
  track.logged |= state_bit(state);
  const std::string& path = source_->sensors()[index].path;
  if (state == State::ok) {
    if (before != State::ok) log::info("hwmon: " + path + " reads again");
    return;
  }
  log::warn("hwmon: " + path + ": " + to_string(state) + ": " + why +
            "; its joules stop growing until it reads again (hwperf_hwmon_sensor_state)");
}

}  // namespace hwperf::hwmon
