// The arithmetic of RAPL energy counters, free of I/O so that every rule is a table-driven test:
// how two raw readings of one counter differ under each interface's wrap rule, how a delta is
// judged plausible, and how deltas add up into a total that stays exact in integers.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

#include "collectors/rapl/rapl_config.h"

namespace hwperf::rapl {

// The configuration's domain enum, whose table (config/config.h) spells every domain.
using Domain = RaplDomain;
inline constexpr Domain kAllDomains[] = {Domain::package, Domain::core, Domain::uncore,
                                         Domain::dram, Domain::psys};

// The domains the configuration asks for (collectors.rapl.domains); all by default.
class DomainSet {
 public:
  static DomainSet all() noexcept { return DomainSet(0x1Fu); }
  static DomainSet none() noexcept { return DomainSet(0u); }
  bool contains(Domain domain) const noexcept { return (bits_ & bit(domain)) != 0; }
  void insert(Domain domain) noexcept { bits_ |= bit(domain); }

 private:
  explicit DomainSet(unsigned bits) noexcept : bits_(bits) {}
  static unsigned bit(Domain domain) noexcept { return 1u << static_cast<unsigned>(domain); }
  unsigned bits_;
};

// How a counter wraps. Each interface has its own rule (docs/collectors/rapl.md,
// "Wrap-around, exactly").
enum class WrapRule {
  modulo_2_32,     // MSR: the low 32 bits of the status register, in hardware energy units
  modulo_2_64,     // perf: the kernel's 64-bit count (but see CounterScale::range)
  powercap_range,  // powercap: energy_uj in [0, max_energy_range_uj], in microjoules
};

struct CounterScale {
  WrapRule rule = WrapRule::modulo_2_64;
  // The most energy, in raw counts, the counter can take between two reads without losing any;
  // 0 where the rule alone says it (MSR: 2^32). powercap_range: the zone's max_energy_range_uj.
  // modulo_2_64 (perf): the kernel's count is 64-bit, but each update of it
  // (arch/x86/events/rapl.c rapl_event_update, on every read() and on the kernel's own timer)
  // adds the difference of two 32-bit hardware readings taken as a *signed* 32-bit number
  // (shift = RAPL_CNTR_WIDTH, then an arithmetic shift back), so more than 2^31 hardware units
  // between updates make the count go down or lose 2^32 units. The kernel's timer is sized for
  // about 200 W; above that only our reads keep it whole. perf_update_range_counts() gives it.
  std::uint64_t range = 0;
  // Raw counts in one joule: 2^ESU for MSR, 10^6 for powercap, 1/.scale for perf. Never 0.
  std::uint64_t counts_per_joule = 1;
};

struct Delta {
  std::uint64_t counts = 0;
  bool wrapped = false;
};

// (current - previous) mod 2^32 on the low 32 bits; the high 32 bits of the MSR are reserved.
Delta msr_delta(std::uint64_t previous, std::uint64_t current) noexcept;
// Unsigned 64-bit subtraction.
Delta perf_delta(std::uint64_t previous, std::uint64_t current) noexcept;
// On a decrease: (max_energy_range_uj - previous) + current + one counter unit, because the
// counter runs through max_energy_range_uj and then 0, which is one hardware step apart.
Delta powercap_delta(std::uint64_t previous_uj, std::uint64_t current_uj,
                     std::uint64_t max_energy_range_uj) noexcept;
// One hardware step in microjoules. The kernel reports max_energy_range_uj as
// 0xFFFFFFFF * energy unit, so the step is range / (2^32 - 1), rounded; at least 1 uJ.
std::uint64_t powercap_counter_unit_uj(std::uint64_t max_energy_range_uj) noexcept;
Delta counter_delta(const CounterScale& scale, std::uint64_t previous,
                    std::uint64_t current) noexcept;

// Energy a counter can take between two reads before counts are lost, in joules (see
// CounterScale::range); +infinity for a perf count without a known range.
double wrap_range_joules(const CounterScale& scale) noexcept;

// The RAPL energy status unit when nothing better is known: 2^-16 J (15.3 uJ), the smallest in
// use (AMD Zen, and Intel server DRAM domains; Intel packages use 2^-14 J), so the range
// derived from it is the shortest and the guard the most frequent.
inline constexpr double kSmallestRaplUnitJoules = 1.0 / 65536;

// perf: the energy the kernel's signed 32-bit update can carry (2^31 hardware units of
// `hardware_unit_joules`), in the perf count's own units (`counts_per_joule`, 2^32 for the
// kernel's 2^-32 J scale). At least 1.
std::uint64_t perf_update_range_counts(double hardware_unit_joules,
                                       std::uint64_t counts_per_joule) noexcept;

// Monotonic energy, exact: whole joules plus a remainder in raw counts, so that no rounding
// accumulates over months and the 64-bit joule part cannot overflow in practice (2^64 J).
class EnergyTotal {
 public:
  EnergyTotal() noexcept = default;
  explicit EnergyTotal(std::uint64_t counts_per_joule) noexcept;
  void add(std::uint64_t counts) noexcept;
  std::uint64_t whole_joules() const noexcept { return joules_; }
  std::uint64_t remainder_counts() const noexcept { return counts_; }
  std::uint64_t counts_per_joule() const noexcept { return counts_per_joule_; }
  double joules() const noexcept;  // the one place this becomes a double: the sample

 private:
  std::uint64_t counts_per_joule_ = 1;
  std::uint64_t joules_ = 0;
  std::uint64_t counts_ = 0;  // < counts_per_joule_
};

// Time allowed on top of the measured interval before a delta counts as implausible. Covers the
// hardware's own update period (~1 ms) and the gap between our timestamp and its update, so that
// two reads microseconds apart never reject one ordinary step.
inline constexpr double kPlausibilitySlackSeconds = 1.0;

// The most counts a delta may hold after `elapsed_seconds` at `max_watts`:
// max_watts * (elapsed + slack) joules, saturating at UINT64_MAX.
std::uint64_t plausible_limit_counts(double max_watts, double elapsed_seconds,
                                     std::uint64_t counts_per_joule) noexcept;

using Clock = std::chrono::steady_clock;

// What one counter last read, to compute the next delta from.
struct CounterState {
  bool primed = false;  // false until the first successful read (the baseline)
  std::uint64_t previous = 0;
  Clock::time_point at{};
};

// What one exported series has seen. Several counters may feed one series (AMD's per-core
// counters all feed the core domain of their package).
struct Tally {
  EnergyTotal energy;
  std::uint64_t wraps = 0;
  std::uint64_t rejected = 0;
  std::uint64_t read_errors = 0;
};

enum class FoldOutcome { baseline, added, rejected };

// Folds one reading into `tally`. The first reading only sets the baseline (energy counts from
// exporter start). A delta above plausible_limit_counts() is counted in `rejected` and not
// added; the reading still becomes the new baseline, so one bad value costs one interval, not
// every later one. Wraps are counted only for deltas that were added.
FoldOutcome fold_reading(const CounterScale& scale, double max_watts, CounterState& state,
                         Tally& tally, std::uint64_t raw, Clock::time_point now) noexcept;

}  // namespace hwperf::rapl
