#include "collectors/rapl/rapl_engine.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "common/log.h"

namespace hwperf::rapl {

PowerCeilings choose_power_ceilings(double configured_watts,
                                    const std::map<unsigned, double>& hardware_hints,
                                    const std::vector<unsigned>& packages) {
  PowerCeilings ceilings;
  std::vector<unsigned> all = packages;
  for (const auto& hint : hardware_hints) all.push_back(hint.first);
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());

  bool any_hardware = false;
  bool any_default = false;
  double sum = 0;
  for (unsigned package : all) {
    double watts = kDefaultPackageWatts;
    if (configured_watts > 0) {
      watts = configured_watts;
    } else if (const auto hint = hardware_hints.find(package);
               hint != hardware_hints.end() && hint->second >= 1) {
      watts = kHardwareHintFactor * hint->second;
      any_hardware = true;
    } else {
      any_default = true;
    }
    ceilings.package_watts[package] = watts;
    sum += watts;
  }
  if (all.empty()) sum = configured_watts > 0 ? configured_watts : kDefaultPackageWatts;
  ceilings.psys_watts = 2 * sum;
  ceilings.origin = configured_watts > 0           ? "configured"
                    : any_hardware && !any_default ? "hardware"
                    : any_hardware                 ? "hardware and default"
                                                   : "default";
  return ceilings;
}

double counter_ceiling(const CounterInfo& counter, const PowerCeilings& ceilings) {
  if (counter.domain == Domain::psys) return ceilings.psys_watts;
  if (counter.package) {
    const auto found = ceilings.package_watts.find(*counter.package);
    if (found != ceilings.package_watts.end()) return found->second;
  }
  // A package the topology does not know: the largest ceiling there is.
  double watts = kDefaultPackageWatts;
  for (const auto& entry : ceilings.package_watts) watts = std::max(watts, entry.second);
  return watts;
}

GuardPlan plan_wrap_guard(const std::vector<CounterInfo>& counters,
                          const std::vector<double>& counter_ceilings, double configured_seconds) {
  GuardPlan plan;
  double shortest_wrap = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < counters.size(); ++i) {
    if (!std::isfinite(wrap_range_joules(counters[i].scale))) continue;
    const double watts = i < counter_ceilings.size() && counter_ceilings[i] > 0
                             ? counter_ceilings[i]
                             : kDefaultPackageWatts;
    shortest_wrap = std::min(shortest_wrap, wrap_range_joules(counters[i].scale) / watts);
  }
  if (!std::isfinite(shortest_wrap)) return plan;
  plan.needed = true;
  plan.derived_seconds = shortest_wrap / kGuardSafetyFactor;
  if (configured_seconds > 0) {
    plan.configured = true;
    plan.interval_seconds = configured_seconds;
  } else {
    plan.interval_seconds = std::clamp(plan.derived_seconds, kGuardMinSeconds, kGuardMaxSeconds);
  }
  return plan;
}

bool SeriesKey::operator<(const SeriesKey& other) const {
  return std::tie(domain, package, die) < std::tie(other.domain, other.package, other.die);
}

bool SeriesKey::operator==(const SeriesKey& other) const {
  return std::tie(domain, package, die) == std::tie(other.domain, other.package, other.die);
}

RaplEngine::RaplEngine(std::unique_ptr<EnergySource> source, std::vector<double> counter_ceilings,
                       NowFn now)
    : source_(std::move(source)), now_(std::move(now)) {
  const auto& infos = source_->counters();
  std::vector<SeriesKey> keys;
  for (const auto& info : infos) keys.push_back({info.domain, info.package, info.die});
  std::vector<SeriesKey> unique = keys;
  std::sort(unique.begin(), unique.end());
  unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
  for (const auto& key : unique) series_.push_back({key, Tally{}});

  std::vector<bool> unit_set(series_.size(), false);
  for (std::size_t i = 0; i < infos.size(); ++i) {
    Counter counter;
    counter.series = static_cast<std::size_t>(
        std::lower_bound(unique.begin(), unique.end(), keys[i]) - unique.begin());
    counter.max_watts = i < counter_ceilings.size() ? counter_ceilings[i] : kDefaultPackageWatts;
    counters_.push_back(counter);
    // Counters feeding one series must share a unit for the total to stay exact; every source
    // builds them that way (AMD's per-core counters share their package's unit register).
    Tally& tally = series_[counter.series].tally;
    const std::uint64_t per_joule = infos[i].scale.counts_per_joule;
    if (!unit_set[counter.series]) {
      tally.energy = EnergyTotal(per_joule);
      unit_set[counter.series] = true;
    } else if (tally.energy.counts_per_joule() != per_joule) {
      throw std::logic_error("rapl: counters of one series have different units: " +
                             infos[i].source);
    }
  }
  const std::lock_guard<std::mutex> lock(mutex_);
  sample_locked();
}

void RaplEngine::sample() {
  const std::lock_guard<std::mutex> lock(mutex_);
  sample_locked();
}

std::vector<SeriesSnapshot> RaplEngine::snapshot() {
  const std::lock_guard<std::mutex> lock(mutex_);
  sample_locked();
  const auto now = now_();
  std::vector<bool> all_frozen(series_.size(), true);
  for (const auto& counter : counters_) {
    if (!counter_frozen(counter, now)) all_frozen[counter.series] = false;
  }
  std::vector<SeriesSnapshot> copy = series_;
  for (std::size_t s = 0; s < copy.size(); ++s) copy[s].frozen = all_frozen[s];
  return copy;
}

std::vector<SeriesKey> RaplEngine::series_keys() {
  const std::lock_guard<std::mutex> lock(mutex_);
  std::vector<SeriesKey> keys;
  keys.reserve(series_.size());
  for (const auto& series : series_) keys.push_back(series.key);
  return keys;
}

bool RaplEngine::counter_frozen(const Counter& counter, Clock::time_point now) const {
  if (counter.moved || !counter.first_value) return false;
  return std::chrono::duration<double>(now - counter.first_read).count() >= kFrozenAfterSeconds;
}

void RaplEngine::track_movement(std::size_t index, std::uint64_t value, Clock::time_point now) {
  Counter& counter = counters_[index];
  if (!counter.first_value) {
    counter.first_value = value;
    counter.first_read = now;
    return;
  }
  if (counter.moved) return;
  const std::string& source = source_->counters()[index].source;
  if (value != *counter.first_value) {
    counter.moved = true;
    if (counter.frozen_logged) {
      log::info("rapl: " + source + " started to move; its energy is exported from now on");
    }
    return;
  }
  if (!counter.frozen_logged && counter_frozen(counter, now)) {
    counter.frozen_logged = true;
    log::warn("rapl: " + source + " has read " + std::to_string(value) + " since startup, " +
              std::to_string(static_cast<int>(kFrozenAfterSeconds)) +
              " s and more: the hardware or hypervisor exposes this counter but does not "
              "measure it; its energy is not exported (hwperf_rapl_energy_frozen 1)");
  }
}

void RaplEngine::sample_locked() {
  for (std::size_t i = 0; i < counters_.size(); ++i) {
    Counter& counter = counters_[i];
    Tally& tally = series_[counter.series].tally;
    const auto reading = source_->read(i);
    if (!reading.ok()) {
      ++tally.read_errors;
      if (!counter.error_logged) {
        // Once per counter: scrapes must not flood the log; the metric keeps counting.
        counter.error_logged = true;
        log::warn("rapl: reading " + source_->counters()[i].source + " failed: " +
                  errno_text(reading.error) + " (counted in hwperf_rapl_read_errors_total)");
      }
      continue;
    }
    const auto now = now_();
    track_movement(i, reading.value, now);
    // Rejections and wraps are counted in the tally; nothing else to do with the outcome here.
    fold_reading(source_->counters()[i].scale, counter.max_watts, counter.state, tally,
                 reading.value, now);
  }
}

WrapGuard::WrapGuard(std::chrono::duration<double> interval, std::function<void()> tick)
    : interval_(interval), tick_(std::move(tick)), thread_([this] { run(); }) {}

WrapGuard::~WrapGuard() noexcept {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void WrapGuard::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  bool failure_logged = false;
  while (true) {
    if (wake_.wait_for(lock, interval_, [this] { return stop_; })) return;
    lock.unlock();
    // Nothing may escape a std::thread (it would end the process); a failed tick is retried at
    // the next period.
    try {
      tick_();
    } catch (const std::exception& e) {
      if (!failure_logged) log::warn(std::string("rapl: wrap guard tick failed: ") + e.what());
      failure_logged = true;
    } catch (...) {
      if (!failure_logged) log::warn("rapl: wrap guard tick failed");
      failure_logged = true;
    }
    lock.lock();
  }
}

}  // namespace hwperf::rapl
