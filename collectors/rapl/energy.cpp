#include "collectors/rapl/energy.h"

#include <cmath>
#include <limits>

namespace hwperf::rapl {
namespace {
constexpr std::uint64_t kLow32 = 0xFFFFFFFFull;
}  // namespace

Delta msr_delta(std::uint64_t previous, std::uint64_t current) noexcept {
  const std::uint64_t prev = previous & kLow32;
  const std::uint64_t cur = current & kLow32;
  return {(cur - prev) & kLow32, cur < prev};
}

Delta perf_delta(std::uint64_t previous, std::uint64_t current) noexcept {
  return {current - previous, current < previous};
}

std::uint64_t powercap_counter_unit_uj(std::uint64_t max_energy_range_uj) noexcept {
  const std::uint64_t unit = (max_energy_range_uj + kLow32 / 2) / kLow32;
  return unit == 0 ? 1 : unit;
}

Delta powercap_delta(std::uint64_t previous_uj, std::uint64_t current_uj,
                     std::uint64_t max_energy_range_uj) noexcept {
  if (current_uj >= previous_uj) return {current_uj - previous_uj, false};
  // A previous reading above the range is out of spec; treat the range as reached rather than
  // let the subtraction underflow into an enormous delta.
  const std::uint64_t to_top =
      previous_uj < max_energy_range_uj ? max_energy_range_uj - previous_uj : 0;
  return {to_top + current_uj + powercap_counter_unit_uj(max_energy_range_uj), true};
}

Delta counter_delta(const CounterScale& scale, std::uint64_t previous,
                    std::uint64_t current) noexcept {
  switch (scale.rule) {
    case WrapRule::modulo_2_32: return msr_delta(previous, current);
    case WrapRule::modulo_2_64: return perf_delta(previous, current);
    case WrapRule::powercap_range: return powercap_delta(previous, current, scale.range);
  }
  return {};
}

double wrap_range_joules(const CounterScale& scale) noexcept {
  const auto per_joule = static_cast<double>(scale.counts_per_joule);
  switch (scale.rule) {
    case WrapRule::modulo_2_32: return 4294967296.0 / per_joule;
    case WrapRule::modulo_2_64:
      return scale.range > 0 ? static_cast<double>(scale.range) / per_joule
                             : std::numeric_limits<double>::infinity();
    case WrapRule::powercap_range: return static_cast<double>(scale.range) / per_joule;
  }
  return std::numeric_limits<double>::infinity();
}

std::uint64_t perf_update_range_counts(double hardware_unit_joules,
                                       std::uint64_t counts_per_joule) noexcept {
  const double counts = 2147483648.0 * hardware_unit_joules * static_cast<double>(counts_per_joule);
  if (!(counts >= 1)) return 1;
  if (counts >= 18446744073709551615.0) return std::numeric_limits<std::uint64_t>::max();
  return static_cast<std::uint64_t>(counts);
}

EnergyTotal::EnergyTotal(std::uint64_t counts_per_joule) noexcept
    : counts_per_joule_(counts_per_joule == 0 ? 1 : counts_per_joule) {}

void EnergyTotal::add(std::uint64_t counts) noexcept {
  joules_ += counts / counts_per_joule_;
  counts_ += counts % counts_per_joule_;
  if (counts_ >= counts_per_joule_) {
    counts_ -= counts_per_joule_;
    ++joules_;
  }
}

double EnergyTotal::joules() const noexcept {
  return static_cast<double>(joules_) +
         static_cast<double>(counts_) / static_cast<double>(counts_per_joule_);
}

std::uint64_t plausible_limit_counts(double max_watts, double elapsed_seconds,
                                     std::uint64_t counts_per_joule) noexcept {
  if (!(elapsed_seconds >= 0)) elapsed_seconds = 0;  // also catches NaN
  const double limit = max_watts * (elapsed_seconds + kPlausibilitySlackSeconds) *
                       static_cast<double>(counts_per_joule);
  // 2^64 as a double; anything at or above it saturates.
  if (!(limit < 18446744073709551616.0)) return std::numeric_limits<std::uint64_t>::max();
  if (limit <= 0) return 0;
  return static_cast<std::uint64_t>(limit);
}

FoldOutcome fold_reading(const CounterScale& scale, double max_watts, CounterState& state,
                         Tally& tally, std::uint64_t raw, Clock::time_point now) noexcept {
  if (!state.primed) {
    state = {true, raw, now};
    return FoldOutcome::baseline;
  }
  const Delta delta = counter_delta(scale, state.previous, raw);
  const std::chrono::duration<double> elapsed = now - state.at;
  state.previous = raw;
  state.at = now;
  if (delta.counts > plausible_limit_counts(max_watts, elapsed.count(), scale.counts_per_joule)) {
    ++tally.rejected;
    return FoldOutcome::rejected;
  }
  tally.energy.add(delta.counts);
  if (delta.wrapped) ++tally.wraps;
  return FoldOutcome::added;
}

}  // namespace hwperf::rapl
