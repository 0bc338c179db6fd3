// The arithmetic of meter readings, free of I/O so that every rule is a table-driven test: how
// two readings of an energy counter differ (a wrap, a reset, an implausible jump), and how two
// power readings become joules.
#pragma once

#include <cstdint>

namespace hwperf::hwmon {

// No hwmon meter measures more than a rack's worth (the largest whole-node meters read a few
// kilowatts): a reading above this, or energy that would take more, is not a measurement.
inline constexpr double kMaxPlausibleWatts = 100000;
// Time allowed on top of the measured interval before a counter's step counts as implausible:
// the chip's own update period and the gap between its update and our timestamp.
inline constexpr double kCounterSlackSeconds = 1;

// hwmon prints an energy counter as the C `long` its core read it into (drivers/hwmon/hwmon.c
// hwmon_attr_show(): "%ld"): 32 bits on a 32-bit kernel, where microjoules pass 2^31 - 1 after
// 2147 J (21 s at 100 W) and go on from -2^31. So a reading that goes from 0 or above to below 0,
// both within 32 bits, is that wrap. A 64-bit counter cannot go negative in practice (2^63 uJ is
// 292,000 years at 1 kW), and any other decrease is the chip starting again from 0 (a BMC reset,
// the driver reloaded): energy of that interval cannot be known.
enum class Step { added, wrapped, reset, implausible };
struct CounterStep {
  Step step = Step::added;
  std::uint64_t microjoules = 0;  // what to add: 0 for reset and implausible
};
CounterStep counter_step(std::int64_t previous, std::int64_t current, double elapsed_seconds);

// A power reading in microwatts that a meter can give: not negative, not above the ceiling.
bool plausible_power(std::int64_t microwatts);

// Energy between two power readings `seconds` apart, by the trapezoid rule: the mean of the two
// readings times the time between them. See docs/collectors/hwmon.md, "Integration".
double trapezoid_joules(std::int64_t previous_microwatts, std::int64_t current_microwatts,
                        double seconds);

// Counted microjoules kept exact as an integer; integrated joules as a double (its relative
// precision, 1e-16, is a microjoule after ten gigajoules).
struct EnergyTotal {
  std::uint64_t microjoules = 0;
  double integrated_joules = 0;
  double joules() const { return static_cast<double>(microjoules) / 1e6 + integrated_joules; }
};

}  // namespace hwperf::hwmon
