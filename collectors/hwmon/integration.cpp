#include "collectors/hwmon/integration.h"

#include <cmath>
#include <limits>

namespace hwperf::hwmon {
namespace {

constexpr std::int64_t kInt32Min = std::numeric_limits<std::int32_t>::min();
constexpr std::int64_t kInt32Max = std::numeric_limits<std::int32_t>::max();

bool within_32_bits(std::int64_t value) { return value >= kInt32Min && value <= kInt32Max; }

// The most microjoules `elapsed_seconds` can hold at the ceiling, with the slack.
double plausible_limit(double elapsed_seconds) {
  return kMaxPlausibleWatts * 1e6 * (std::max(elapsed_seconds, 0.0) + kCounterSlackSeconds);
}

}  // namespace

CounterStep counter_step(std::int64_t previous, std::int64_t current, double elapsed_seconds) {
  CounterStep result;
  std::uint64_t delta = 0;
  if (current >= previous) {
    delta = static_cast<std::uint64_t>(current) - static_cast<std::uint64_t>(previous);
  } else if (previous >= 0 && current < 0 && within_32_bits(previous) && within_32_bits(current)) {
    // (current - previous) mod 2^32: what the chip counted past 2^31 - 1.
    delta = (std::uint64_t{1} << 32) - static_cast<std::uint64_t>(previous - current);
    result.step = Step::wrapped;
  } else {
    result.step = Step::reset;
    return result;
  }
  if (static_cast<double>(delta) > plausible_limit(elapsed_seconds)) {
    result.step = Step::implausible;
    return result;
  }
  result.microjoules = delta;
  return result;
}

bool plausible_power(std::int64_t microwatts) {
  return microwatts >= 0 && static_cast<double>(microwatts) <= kMaxPlausibleWatts * 1e6;
}

double trapezoid_joules(std::int64_t previous_microwatts, std::int64_t current_microwatts,
                        double seconds) {
  const double mean_watts =
      (static_cast<double>(previous_microwatts) + static_cast<double>(current_microwatts)) / 2e6;
  return mean_watts * seconds;
}

}  // namespace hwperf::hwmon
