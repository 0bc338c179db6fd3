// The hwmon collector's pure rules, as tables: counter steps (32-bit wraps of the kernel's long,
// resets, implausible jumps), the trapezoid, plausible power, the number hwmon prints, what each
// meter's label says it measures, and the state a failed read leaves.
#include "tests/catch.hpp"

#include <cerrno>
#include <cstdint>
#include <limits>
#include <optional>

#include "collectors/hwmon/hwmon_engine.h"
#include "collectors/hwmon/hwmon_sysfs.h"
#include "collectors/hwmon/integration.h"
#include "collectors/hwmon/meters.h"

using namespace hwperf::hwmon;

namespace {

constexpr std::int64_t kLong32Max = std::numeric_limits<std::int32_t>::max();
constexpr std::int64_t kLong32Min = std::numeric_limits<std::int32_t>::min();
constexpr std::int64_t kLong32Wrap = std::int64_t{1} << 32;

struct CounterStepRow {
  const char* what;
  std::int64_t previous;
  std::int64_t current;
  double elapsed;
  Step step;
  std::uint64_t microjoules;
};

}  // namespace

TEST_CASE("hwmon counter steps: increases, 32-bit wraps, resets and implausible jumps", "[hwmon]") {
  const CounterStepRow row = GENERATE(
      CounterStepRow{"equal readings", 5000, 5000, 1, Step::added, 0},
      CounterStepRow{"increase", 5000, 7500, 1, Step::added, 7500 - 5000},
      // The kernel's 32-bit long goes from 2^31 - 1 to -2^31: one microjoule.
      CounterStepRow{"wrap by one", kLong32Max, kLong32Min, 1, Step::wrapped, 1},
      CounterStepRow{
          "wrap across", kLong32Max - 646, kLong32Min + 648, 1, Step::wrapped,
          static_cast<std::uint64_t>((kLong32Min + 648) - (kLong32Max - 646) + kLong32Wrap)},
      CounterStepRow{"negative values rising after a wrap", -2000000000, -1000000000, 20,
                     Step::added, 1000000000},
      CounterStepRow{"decrease to a small positive: the chip started again", 9000000, 12, 1,
                     Step::reset, 0},
      CounterStepRow{"decrease within the negatives", -1000, -2000, 1, Step::reset, 0},
      CounterStepRow{"a 64-bit counter going down", std::int64_t{1} << 40, std::int64_t{1} << 39, 1,
                     Step::reset, 0},
      CounterStepRow{"from above 32 bits to below 0 is no 32-bit wrap", std::int64_t{1} << 33, -5,
                     1, Step::reset, 0},
      // 100 kW for 1 s plus 1 s of slack is 2e11 uJ.
      CounterStepRow{"at the ceiling", 0, 200000000000, 1, Step::added, 200000000000},
      CounterStepRow{"above the ceiling", 0, 200000000001, 1, Step::implausible, 0},
      CounterStepRow{"a wrap that would be above the ceiling", 10, -10, 0, Step::wrapped,
                     static_cast<std::uint64_t>(kLong32Wrap - 20)});
  CAPTURE(row.what);
  const CounterStep step = counter_step(row.previous, row.current, row.elapsed);
  CHECK(step.step == row.step);
  CHECK(step.microjoules == row.microjoules);
}

TEST_CASE("hwmon power integrates by the trapezoid and refuses implausible readings", "[hwmon]") {
  CHECK(trapezoid_joules(100000000, 300000000, 0.5) == Approx((100 + 300) / 2.0 * 0.5));
  CHECK(trapezoid_joules(250000000, 250000000, 4) == Approx(250 * 4.0));
  CHECK(trapezoid_joules(7, 7, 0) == 0);
  CHECK(plausible_power(0));
  CHECK(plausible_power(static_cast<std::int64_t>(kMaxPlausibleWatts * 1e6)));
  CHECK_FALSE(plausible_power(static_cast<std::int64_t>(kMaxPlausibleWatts * 1e6) + 1));
  CHECK_FALSE(plausible_power(-1));
}

TEST_CASE("hwmon readings are decimal longs followed by nothing but whitespace", "[hwmon]") {
  const std::pair<const char*, std::int64_t> accepted[] = {
      {"123456\n", 123456},
      {"0\n", 0},
      {"-2147483648\n", kLong32Min},
      {"9223372036854775807\n", std::numeric_limits<std::int64_t>::max()},
      {"-9223372036854775808\n", std::numeric_limits<std::int64_t>::min()}};
  for (const auto& [text, value] : accepted) {
    CAPTURE(text);
    CHECK(parse_reading(text) == value);
  }
  for (const char* text : {"9223372036854775808\n", "", "\n", "-\n", "12 34\n", "0x10\n", "+5\n",
                           "unknown\n", " 5\n", "5.5\n"}) {
    CAPTURE(text);
    CHECK_FALSE(parse_reading(text).has_value());
  }
}

TEST_CASE("hwmon meters are classified by chip, channel and label", "[hwmon]") {
  struct Row {
    const char* chip;
    unsigned channel;
    const char* label;
    std::optional<Kind> kind;
    std::optional<unsigned> socket;
  };
  const Row row = GENERATE(
      Row{"power_meter", 1, "Grace Power Socket 0", Kind::package, 0u},
      Row{"power_meter", 1, "CPU Power Socket 1", Kind::cpu_rail, 1u},
      Row{"power_meter", 1, "SysIO Power Socket 2364", Kind::sysio_rail, 2364u},
      Row{"power_meter", 1, "Module Power Socket 0", Kind::module, 0u},
      Row{"power_meter", 1, "module power socket 3", Kind::module, 3u},
      Row{"power_meter", 1, "", Kind::node, std::nullopt},
      Row{"power_meter", 1, "Meter measures total domain", Kind::node, std::nullopt},
      Row{"power_meter", 1, "CPU Power Socket", Kind::node, std::nullopt},
      Row{"apm_xgene", 1, "CPU power", Kind::cpu_rail, std::nullopt},
      Row{"apm_xgene", 2, "IO power", Kind::sysio_rail, std::nullopt},
      Row{"apm_xgene", 3, "CPU power", std::nullopt, std::nullopt},
      Row{"aem2", 1, "", Kind::node, std::nullopt}, Row{"aem2", 2, "", std::nullopt, std::nullopt});
  CAPTURE(row.chip, row.channel, row.label);
  const MeterChip* chip = find_meter_chip(row.chip);
  REQUIRE(chip != nullptr);
  const auto classification = classify(*chip, row.channel, row.label);
  REQUIRE(classification.has_value() == row.kind.has_value());
  if (!classification) return;
  CHECK(classification->kind == *row.kind);
  CHECK(classification->socket == row.socket);
}

TEST_CASE("hwmon chips that are no power meter are not read", "[hwmon]") {
  for (const char* name : {"coretemp", "nvme", "amdgpu", "i915", "acpitz", ""}) {
    CAPTURE(name);
    CHECK(find_meter_chip(name) == nullptr);
  }
  CHECK(channel_attribute("power#_average", 12) == "power12_average");
}

TEST_CASE("a failed hwmon read says why in the sensor's state", "[hwmon]") {
  struct Row {
    int error;
    State state;
  };
  const Row row = GENERATE(
      Row{ENOENT, State::gone}, Row{ENODEV, State::gone}, Row{ENXIO, State::gone},
      Row{ENODATA, State::no_data}, Row{EINVAL, State::garbage}, Row{ENOTSUP, State::garbage},
      Row{ELOOP, State::garbage}, Row{EFBIG, State::garbage}, Row{EIO, State::io_error},
      Row{ETIMEDOUT, State::io_error}, Row{EAGAIN, State::io_error});
  CAPTURE(row.error);
  CHECK(state_of_error(row.error) == row.state);
}
