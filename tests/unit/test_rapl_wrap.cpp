// The wrap arithmetic of each interface, the exact accumulator and the plausibility rule, as
// tables. Every expected value is written as the rule that produces it from the row's inputs.
#include "tests/catch.hpp"

#include <chrono>
#include <cstdint>
#include <limits>

#include "collectors/rapl/energy.h"

using namespace hwperf::rapl;

namespace {
constexpr std::uint64_t k2to32 = 0x100000000ull;
constexpr std::uint64_t kMax32 = 0xFFFFFFFFull;

// One row of a delta table: two raw readings, the delta they must give, and whether it wrapped.
struct Row {
  const char* what;
  std::uint64_t previous;
  std::uint64_t current;
  std::uint64_t expected;
  bool wrapped;
};
}  // namespace

TEST_CASE("MSR deltas are (current - previous) mod 2^32 on the low 32 bits", "[rapl]") {
  const Row row = GENERATE(
      Row{"equal readings", 123456, 123456, 0, false},
      Row{"plain increase", 1000, 1500, 1500 - 1000, false},
      Row{"wrap of one unit", kMax32, 0, 1, true},
      Row{"wrap across zero", kMax32 - 15, 16, (k2to32 - (kMax32 - 15)) + 16, true},
      Row{"one short of a full turn", 1, 0, k2to32 - 1, true},
      // Bits 63:32 are reserved and may change; they must not leak into the delta.
      Row{"reserved high bits ignored", 0xABCD00000005ull, 0x123400000007ull, 7 - 5, false},
      Row{"equal low bits, different high bits", 0x1'00000010ull, 0x2'00000010ull, 0, false});
  CAPTURE(row.what);
  const Delta delta = msr_delta(row.previous, row.current);
  CHECK(delta.counts == row.expected);
  CHECK(delta.wrapped == row.wrapped);
}

TEST_CASE("perf deltas are unsigned 64-bit subtraction", "[rapl]") {
  constexpr std::uint64_t max64 = std::numeric_limits<std::uint64_t>::max();
  const Row row = GENERATE_COPY(
      Row{"equal readings", 42, 42, 0, false},
      Row{"plain increase", 1ull << 40, (1ull << 40) + 12345, 12345, false},
      // perf counts are not masked to 32 bits: a step past 2^32 is energy, not a wrap.
      Row{"past 2^32 is not a wrap", kMax32, k2to32 + 9, (k2to32 + 9) - kMax32, false},
      Row{"wrap of one unit", max64, 0, 1, true},
      Row{"wrap across zero", max64 - 2, 5, 3 + 5, true});
  CAPTURE(row.what);
  const Delta delta = perf_delta(row.previous, row.current);
  CHECK(delta.counts == row.expected);
  CHECK(delta.wrapped == row.wrapped);
}

TEST_CASE("powercap deltas add the zone's range and one counter unit on a decrease", "[rapl]") {
  // 61 uJ is the unit of ESU 14 as the kernel rounds it; the range is what the kernel reports.
  const std::uint64_t unit = GENERATE(as<std::uint64_t>{}, 61, 15, 1);
  const std::uint64_t range = unit * kMax32;
  struct Row {
    const char* what;
    std::uint64_t previous;
    std::uint64_t current;
  };
  const Row row = GENERATE_COPY(
      Row{"equal readings", 5000, 5000}, Row{"equal at zero", 0, 0},
      Row{"plain increase", 5000, 5000 + 7 * unit}, Row{"wrap of one unit", range, 0},
      Row{"wrap across zero", range - 100 * unit, 3 * unit}, Row{"equal at the top", range, range});
  CAPTURE(row.what, unit);
  // The counter runs up to `range`, then to 0, one unit later: a decrease is the way to the
  // top, the step over it, and the way up from 0.
  const bool decrease = row.current < row.previous;
  const std::uint64_t expected =
      decrease ? (range - row.previous) + unit + row.current : row.current - row.previous;
  const Delta delta = powercap_delta(row.previous, row.current, range);
  CHECK(delta.counts == expected);
  CHECK(delta.wrapped == decrease);
}

TEST_CASE("the powercap counter unit is the range over 2^32 - 1, rounded, at least 1 uJ",
          "[rapl]") {
  // Ranges as real kernels print them: ESU 14 (61035 nJ truncated) and DRAM's 15300 nJ.
  const std::uint64_t esu14_range = kMax32 * 61035 / 1000;
  const std::uint64_t dram_range = kMax32 * 15300 / 1000;
  CHECK(powercap_counter_unit_uj(esu14_range) == (esu14_range + kMax32 / 2) / kMax32);
  CHECK(powercap_counter_unit_uj(esu14_range) == 61);
  CHECK(powercap_counter_unit_uj(dram_range) == 15);
  // Below one unit per count (fixtures with small ranges) a counter unit is the finest a uJ
  // reading can show.
  CHECK(powercap_counter_unit_uj(1000) == 1);
  CHECK(powercap_counter_unit_uj(0) == 1);
}

TEST_CASE("a powercap previous reading above the range cannot underflow", "[rapl]") {
  const std::uint64_t range = 1000;
  const Delta delta = powercap_delta(range + 500, 10, range);
  // Treated as if it had been at the top: the step over it and the way up from 0.
  CHECK(delta.counts == 1 + 10);
  CHECK(delta.wrapped);
}

TEST_CASE("wrap range in joules follows the rule and the unit", "[rapl]") {
  const std::uint64_t esu = 14;
  CHECK(wrap_range_joules({WrapRule::modulo_2_32, 0, 1ull << esu}) ==
        static_cast<double>(k2to32) / static_cast<double>(1ull << esu));
  CHECK(wrap_range_joules({WrapRule::powercap_range, 262143328850ull, 1000000}) ==
        262143328850.0 / 1e6);
  CHECK(wrap_range_joules({WrapRule::modulo_2_64, 0, 1ull << 32}) ==
        std::numeric_limits<double>::infinity());
}

TEST_CASE("EnergyTotal keeps whole joules and a remainder exactly", "[rapl]") {
  const std::uint64_t per_joule = GENERATE(as<std::uint64_t>{}, 1000000, 1ull << 14, 1ull << 32, 1);
  EnergyTotal total(per_joule);
  // Steps chosen to cross joule boundaries through the remainder as well as in one go.
  const std::uint64_t steps[] = {per_joule - 1,     1, per_joule / 2 + 1, per_joule / 2 + 1,
                                 3 * per_joule + 7, 0};
  std::uint64_t sum = 0;
  for (std::uint64_t step : steps) {
    total.add(step);
    sum += step;
  }
  CAPTURE(per_joule);
  CHECK(total.whole_joules() == sum / per_joule);
  CHECK(total.remainder_counts() == sum % per_joule);
  CHECK(total.joules() ==
        Approx(static_cast<double>(sum) / static_cast<double>(per_joule)).epsilon(1e-15));
}

TEST_CASE("EnergyTotal does not overflow where raw counts would", "[rapl]") {
  // perf counts in 2^-32 J: 2^64 counts is only 2^32 J (50 days at 1 kW). The total must go on.
  const std::uint64_t per_joule = 1ull << 32;
  EnergyTotal total(per_joule);
  const std::uint64_t big = std::numeric_limits<std::uint64_t>::max();
  total.add(big);
  total.add(big);
  // 2 * (2^64 - 1) counts = 2 * (2^32 J - 2^-32 J).
  CHECK(total.whole_joules() == 2 * (big / per_joule) + (2 * (big % per_joule)) / per_joule);
  CHECK(total.joules() > static_cast<double>(big / per_joule));
}

TEST_CASE("the plausibility limit is max power times (elapsed + slack), saturating", "[rapl]") {
  const double watts = 200;
  const std::uint64_t per_joule = 1000000;
  const double elapsed = GENERATE(0.0, 0.5, 15.0);
  CAPTURE(elapsed);
  const auto limit = plausible_limit_counts(watts, elapsed, per_joule);
  CHECK(limit == static_cast<std::uint64_t>(watts * (elapsed + kPlausibilitySlackSeconds) *
                                            static_cast<double>(per_joule)));
  CHECK(plausible_limit_counts(1e30, 1e30, per_joule) == std::numeric_limits<std::uint64_t>::max());
  // A clock that went backwards counts as no time, not as negative energy.
  CHECK(plausible_limit_counts(watts, -5, per_joule) ==
        plausible_limit_counts(watts, 0, per_joule));
}

TEST_CASE("fold_reading: baseline, equal readings, wraps and an implausible jump", "[rapl]") {
  // An MSR counter in 2^-14 J, a package allowed 100 W, readings one second apart.
  const std::uint64_t per_joule = 1ull << 14;
  const CounterScale scale{WrapRule::modulo_2_32, 0, per_joule};
  const double watts = 100;
  const auto t0 = Clock::time_point{} + std::chrono::hours(1);
  const auto second = std::chrono::seconds(1);
  const std::uint64_t limit_1s = plausible_limit_counts(watts, 1.0, per_joule);

  CounterState state;
  Tally tally{EnergyTotal(per_joule)};
  std::uint64_t expected_counts = 0;

  const std::uint64_t start = kMax32 - 1000;
  REQUIRE(fold_reading(scale, watts, state, tally, start, t0) == FoldOutcome::baseline);
  CHECK(tally.energy.joules() == 0);

  // Equal readings: a zero delta, not a wrap of a full turn.
  REQUIRE(fold_reading(scale, watts, state, tally, start, t0 + second) == FoldOutcome::added);
  CHECK(tally.wraps == 0);

  // Across the wrap by 3000 counts.
  const std::uint64_t after_wrap = 2000;
  REQUIRE(fold_reading(scale, watts, state, tally, after_wrap, t0 + 2 * second) ==
          FoldOutcome::added);
  expected_counts += (k2to32 - start) + after_wrap;
  CHECK(tally.wraps == 1);

  // A jump the package cannot have drawn in one second: rejected, counted, not added ...
  const std::uint64_t jump = after_wrap + limit_1s + 1;
  REQUIRE(fold_reading(scale, watts, state, tally, jump, t0 + 3 * second) == FoldOutcome::rejected);
  CHECK(tally.rejected == 1);
  // ... and the next reading continues from the jump, so one bad value costs one interval.
  const std::uint64_t after_jump = jump + 500;
  REQUIRE(fold_reading(scale, watts, state, tally, after_jump, t0 + 4 * second) ==
          FoldOutcome::added);
  expected_counts += after_jump - jump;

  // The largest plausible delta is still added.
  const std::uint64_t at_limit = after_jump + limit_1s;
  REQUIRE(fold_reading(scale, watts, state, tally, at_limit, t0 + 5 * second) ==
          FoldOutcome::added);
  expected_counts += limit_1s;

  CHECK(
      tally.energy.joules() ==
      Approx(static_cast<double>(expected_counts) / static_cast<double>(per_joule)).epsilon(1e-15));
  CHECK(tally.rejected == 1);
  CHECK(tally.wraps == 1);
}

TEST_CASE("fold_reading rejects a powercap glitch that reads as a near-full wrap", "[rapl]") {
  // A zone's value stepping back by one unit would mean "wrapped and came round again": almost
  // a whole range in one guard period. It must be rejected, not added.
  const std::uint64_t unit = 61;
  const std::uint64_t range = unit * kMax32;
  const CounterScale scale{WrapRule::powercap_range, range, 1000000};
  const double watts = 1000;
  const auto t0 = Clock::time_point{} + std::chrono::hours(1);
  CounterState state;
  Tally tally{EnergyTotal(1000000)};
  fold_reading(scale, watts, state, tally, 5000000, t0);
  const auto outcome =
      fold_reading(scale, watts, state, tally, 5000000 - unit, t0 + std::chrono::seconds(60));
  CHECK(outcome == FoldOutcome::rejected);
  CHECK(tally.rejected == 1);
  CHECK(tally.wraps == 0);
  CHECK(tally.energy.joules() == 0);
}

TEST_CASE("domain names round-trip and unknown names are refused", "[rapl]") {
  for (Domain domain : kAllDomains) {
    CHECK(hwperf::parse_name(hwperf::kRaplDomainNames, to_string(domain)) == domain);
  }
  CHECK_FALSE(hwperf::parse_name(hwperf::kRaplDomainNames, "gpu"));
  CHECK_FALSE(hwperf::parse_name(hwperf::kRaplDomainNames, "Package"));
}
