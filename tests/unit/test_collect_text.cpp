// The text path of a scrape (Collector::collect_text, CollectorSet::collect_text, the RAPL
// collector's prepared families) against the families path it replaces on /metrics: the same
// bytes, in both formats, whatever state the series are in.
#include "tests/catch.hpp"

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "collectors/collector_set.h"
#include "collectors/exposition_text.h"
#include "collectors/metrics.h"
#include "collectors/prepared_family.h"
#include "collectors/rapl/rapl_collector.h"
#include "tests/support/support.h"
#include "tests/support/rapl_fakes.h"

using namespace hwperf;
using namespace hwperf::test::rapl_fakes;

namespace {

constexpr ExpositionFormat kBothFormats[] = {ExpositionFormat::text_0_0_4,
                                             ExpositionFormat::openmetrics_1_0_0};

// What collect() gives, serialized, and what collect_text() writes, for one format. Both read
// the counters; a fake source whose values stay put between them gives both the same values.
void check_paths_agree(Collector& collector, ExpositionFormat format) {
  std::vector<prometheus::MetricFamily> families;
  collector.collect(families);
  std::string families_text;
  append_families(families_text, families, format);
  std::string text = "before\n";
  collect_text(collector, text, format);
  CHECK(text == "before\n" + families_text);
}

std::string without_lines_of(const std::string& text, const std::string& name) {
  std::string out;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = text.find('\n', at);
    const std::string line = text.substr(at, end - at + 1);
    if (line.rfind(name + "{", 0) != 0) out += line;
    at = end + 1;
  }
  return out;
}

// Writes part of its text and then fails, as a collector can midway through a scrape.
class HalfwayFailingCollector final : public Collector, public PreparedText {
 public:
  std::string name() const override { return "halfway"; }
  void collect(std::vector<prometheus::MetricFamily>& out) override {
    out.push_back(single_gauge("hwperf_halfway_value", "Written before the failure.", {}, 1));
    throw std::runtime_error("failed after its first family");
  }
  void collect_text(std::string& out, ExpositionFormat format) override {
    out += format == ExpositionFormat::openmetrics_1_0_0 ? "# TYPE partial gauge\n"
                                                         : "# TYPE partial untyped\n";
    throw std::runtime_error("failed after its first line");
  }
};

class SteadyCollector final : public Collector {
 public:
  std::string name() const override { return "steady"; }
  void collect(std::vector<prometheus::MetricFamily>& out) override {
    auto family = make_counter_family({"steady", "events"}, "Events, with a \"quoted\" \\ help.");
    add_counter(family, {{"path", "a\"b\\c\nd"}}, std::uint64_t{12345678901234});
    add_counter(family, {}, 0.5);
    out.push_back(std::move(family));
  }
};

}  // namespace

TEST_CASE("the RAPL collector's text path writes the bytes its families serialize to",
          "[rapl][exposition]") {
  auto state = std::make_shared<FakeState>();
  const unsigned esu = 14;
  const std::vector<CounterInfo> counters = {
      msr_counter(Domain::package, 0u, esu), msr_counter(Domain::package, 1u, esu),
      msr_counter(Domain::core, 0u, esu), msr_counter(Domain::dram, 1u, 16, 1u),
      msr_counter(Domain::psys, std::nullopt, esu)};
  state->values = {1000, kTwoTo32 - 5, 42, 7, 0};
  state->errors.resize(state->values.size(), 0);
  FakeClock clock;
  std::vector<ProbeResult> probes;
  probes.push_back(failed_probe(RaplInterface::perf, "unsupported"));
  probes.push_back(fake_probe(counters, state));
  RaplCollectorConfig config;
  config.max_power_watts = 50;
  config.wrap_guard_interval_seconds = 3600;
  auto collector = build_rapl_collector(std::move(probes), config, two_packages(), clock.fn());

  SECTION("at the first scrape") {
    for (const auto format : kBothFormats) check_paths_agree(*collector, format);
  }
  SECTION("with a wrap, a rejected jump, a read error and a frozen psys counter") {
    clock.advance(std::chrono::seconds(1));
    state->set(0, 1000 + 16384 * 3);
    state->set(1, 10);                             // past 2^32: a wrap
    state->set(2, 42 + (std::uint64_t{1} << 30));  // far above 50 W: rejected
    state->fail(3, EIO);
    clock.advance(std::chrono::seconds(static_cast<long>(kFrozenAfterSeconds) + 1));
    std::vector<prometheus::MetricFamily> read_once;
    collector->collect(read_once);
    // Each path reads again: with the failure still there, each would count one more error.
    state->set(3, 7);
    for (const auto format : kBothFormats) check_paths_agree(*collector, format);
    const auto samples = test::scrape(*collector);
    CHECK(value_of(samples, "hwperf_rapl_energy_frozen", {{"domain", "psys"}}) == 1);
    CHECK(value_of(samples, "hwperf_rapl_wraps_total", {{"domain", "package"}, {"package", "1"}}) ==
          1);
    CHECK(value_of(samples, "hwperf_rapl_rejected_deltas_total",
                   {{"domain", "core"}, {"package", "0"}}) == 1);
    CHECK(value_of(samples, "hwperf_rapl_read_errors_total",
                   {{"domain", "dram"}, {"package", "1"}, {"die", "1"}}) == 1);
    CHECK(test::find_samples(samples, "hwperf_rapl_psys_joules_total").empty());
  }
}

TEST_CASE("the RAPL collector without an interface writes the same text on both paths",
          "[rapl][exposition]") {
  std::vector<ProbeResult> probes;
  probes.push_back(failed_probe(RaplInterface::powercap, "absent"));
  auto collector = build_rapl_collector(std::move(probes), RaplCollectorConfig{}, two_packages());
  for (const auto format : kBothFormats) check_paths_agree(*collector, format);
}

TEST_CASE("a prepared family writes what append_families writes for the samples given",
          "[exposition]") {
  auto shape = make_counter_family({"prepared", "events"}, "Help with \"quotes\" and \\.\nNext.");
  add_counter(shape, {{"path", "a\"b\\c\nd"}, {"cpu", "0"}}, 0.0);
  add_counter(shape, {}, 0.0);
  add_counter(shape, {{"cpu", "1"}}, 0.0);
  const PreparedFamily prepared(shape);
  REQUIRE(prepared.size() == 3);
  for (const auto format : kBothFormats) {
    // Series 2 and 0, in that order, with values of every kind the formats spell.
    auto expected = shape;
    expected.metric = {shape.metric[2], shape.metric[0]};
    expected.metric[0].counter.value = 1e300;
    expected.metric[1].counter.value = 18446744073709551615.0;
    std::string families_text;
    append_families(families_text, {expected}, format);
    std::string text;
    PreparedFamily::Writer writer(prepared, text, format);
    writer.sample(2, 1e300);
    writer.sample(0, 18446744073709551615.0);
    CHECK(text == families_text);
    // No sample, no family: not even its HELP and TYPE lines.
    std::string empty;
    PreparedFamily::Writer none(prepared, empty, format);
    CHECK(empty.empty());
  }
}

TEST_CASE("the collector set's text path drops a failing collector's partial text",
          "[exposition]") {
  CollectorSet set;
  set.add(std::make_unique<SteadyCollector>());
  set.add(std::make_unique<HalfwayFailingCollector>());
  for (const auto format : kBothFormats) {
    std::string families_text;
    append_families(families_text, set.collect(), format);
    std::string text;
    set.collect_text(text, format);
    CHECK(text.find("partial") == std::string::npos);
    CHECK(text.find("halfway_value") == std::string::npos);
    CHECK_THAT(text, Catch::Contains("hwperf_scrape_collector_success{collector=\"halfway\"} 0\n"));
    // The durations differ from one call to the next; everything else is the same text.
    const std::string durations = "hwperf_scrape_collector_duration_seconds";
    CHECK(without_lines_of(text, durations) == without_lines_of(families_text, durations));
    CHECK(test::occurrences(text, durations + "{") == 2);
  }
}
