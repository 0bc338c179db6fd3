#include "tests/catch.hpp"

#include <cmath>
#include <limits>

#include <prometheus/text_serializer.h>

#include "collectors/collector_set.h"
#include "collectors/metrics.h"
#include "exporter/compression/gzip.h"
#include "exporter/exposition.h"
#include "tests/support/support.h"

using namespace hwperf;

namespace {
std::vector<prometheus::MetricFamily> sample_families() {
  auto counter = make_family(counter_name({"cpu", "instructions"}),
                             "Instructions \\ retired\nper CPU.", prometheus::MetricType::Counter);
  add_counter(counter, {{"cpu", "0"}, {"path", "a\"b\\c\nd"}}, std::uint64_t{12345678901234});
  add_counter(counter, {{"cpu", "1"}, {"path", ""}}, std::uint64_t{0});
  auto gauge = make_family(metric_name({"cpu", "info"}), "Info.", prometheus::MetricType::Gauge);
  add_gauge(gauge, {{"cpu", "0"}}, 1.0);
  add_gauge(gauge, {{"cpu", "1"}}, 0.25);
  return {counter, gauge};
}
}  // namespace

TEST_CASE("Accept negotiation", "[exposition]") {
  auto [accept, expected] = GENERATE(table<std::string, ExpositionFormat>({
      {"", ExpositionFormat::text_0_0_4},
      {"*/*", ExpositionFormat::text_0_0_4},
      {"text/plain", ExpositionFormat::text_0_0_4},
      {"application/openmetrics-text", ExpositionFormat::openmetrics_1_0_0},
      {"application/openmetrics-text; version=1.0.0", ExpositionFormat::openmetrics_1_0_0},
      // What Prometheus 2.42 sends.
      {"application/openmetrics-text;version=1.0.0,application/"
       "openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
       ExpositionFormat::openmetrics_1_0_0},
      {"text/plain;version=0.0.4;q=0.9,application/openmetrics-text;q=0.5",
       ExpositionFormat::text_0_0_4},
      {"application/openmetrics-text;version=0.0.1", ExpositionFormat::text_0_0_4},
      {"application/openmetrics-text;version=2.0.0", ExpositionFormat::text_0_0_4},
      {"application/openmetrics-text;q=0", ExpositionFormat::text_0_0_4},
      {"APPLICATION/OpenMetrics-Text ; Version=\"1.0.0\"", ExpositionFormat::openmetrics_1_0_0},
      {"garbage;;;,,", ExpositionFormat::text_0_0_4},
      // The most specific range decides (RFC 9110 12.5.1), not the highest quality of any.
      {"text/plain;q=0.1, application/openmetrics-text;q=0.5, */*",
       ExpositionFormat::openmetrics_1_0_0},
      {"text/*;q=0.2, application/openmetrics-text;q=0.5, */*",
       ExpositionFormat::openmetrics_1_0_0},
      {"application/openmetrics-text;q=0, */*", ExpositionFormat::text_0_0_4},
      {"*/*;q=0.5, application/*", ExpositionFormat::openmetrics_1_0_0},
  }));
  CAPTURE(accept);
  CHECK(negotiate_format(accept) == expected);
}

TEST_CASE("Accept-Encoding", "[exposition]") {
  CHECK(accepts_gzip("gzip"));
  CHECK(accepts_gzip("deflate, gzip;q=0.5"));
  CHECK(accepts_gzip("*"));
  CHECK_FALSE(accepts_gzip(""));
  CHECK_FALSE(accepts_gzip("identity"));
  CHECK_FALSE(accepts_gzip("gzip;q=0"));
  // "*" stands only for codings the field does not name (RFC 9110 12.5.3).
  CHECK_FALSE(accepts_gzip("gzip;q=0, *"));
  CHECK_FALSE(accepts_gzip("*, gzip;q=0"));
  CHECK_FALSE(accepts_gzip("*;q=0"));
  CHECK_FALSE(accepts_gzip("identity, *;q=0"));
  CHECK(accepts_gzip("identity;q=0.5, *;q=0.1"));
  CHECK(accepts_gzip("GZIP;Q=0.001"));
  CHECK(accepts_gzip("x-gzip"));
  CHECK_FALSE(accepts_gzip("x-gzip;q=0, *"));
}

TEST_CASE("gzip output decompresses to the input", "[exposition]") {
  const std::string text = serialize(sample_families(), ExpositionFormat::text_0_0_4);
  const std::string compressed = gzip_compress(text);
  CHECK(compressed.size() > 10);
  CHECK(static_cast<unsigned char>(compressed[0]) == 0x1f);
  CHECK(static_cast<unsigned char>(compressed[1]) == 0x8b);
  CHECK(test::gunzip(compressed) == text);
}

TEST_CASE("a gzip stream over a prefix compressed once decompresses to prefix and rest",
          "[exposition]") {
  // A prefix longer than deflate's 32 KiB window, so the state copied is a full one.
  std::string big;
  for (int cpu = 0; big.size() < 200 * 1024; ++cpu) {
    big += "hwperf_cpu_info{cpu=\"" + std::to_string(cpu) + "\",core=\"" + std::to_string(cpu / 2) +
           "\"} 1\n";
  }
  for (const std::string& prefix : {std::string(), std::string("# TYPE x gauge\n"), big}) {
    CAPTURE(prefix.size());
    const PrefixedGzip gzip(prefix);
    for (const std::string& rest :
         {std::string(), serialize(sample_families(), ExpositionFormat::openmetrics_1_0_0)}) {
      CAPTURE(rest.size());
      // Twice: the saved state must not be consumed by the first call.
      CHECK(test::gunzip(gzip.compress(rest)) == prefix + rest);
      CHECK(test::gunzip(gzip.compress(rest)) == prefix + rest);
    }
  }
}

TEST_CASE("text 0.0.4 and OpenMetrics carry the same samples", "[exposition]") {
  const auto families = sample_families();
  const auto text = test::parse_exposition(serialize(families, ExpositionFormat::text_0_0_4));
  const auto om = test::parse_exposition(serialize(families, ExpositionFormat::openmetrics_1_0_0));
  REQUIRE(text.size() == 4);
  REQUIRE(om.size() == text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    CHECK(text[i].name == om[i].name);
    CHECK(text[i].labels == om[i].labels);
    CHECK(text[i].value == om[i].value);
  }
  CHECK(text[0].labels.at("path") == "a\"b\\c\nd");
  CHECK(text[0].value == 12345678901234.0);
}

TEST_CASE("OpenMetrics types counters without _total and ends with # EOF", "[exposition]") {
  const std::string om = serialize(sample_families(), ExpositionFormat::openmetrics_1_0_0);
  CHECK_THAT(om, Catch::Contains("# TYPE hwperf_cpu_instructions counter\n"));
  CHECK_THAT(
      om, Catch::Contains("# HELP hwperf_cpu_instructions Instructions \\\\ retired\\nper CPU.\n"));
  CHECK_THAT(
      om,
      Catch::Contains(
          "\nhwperf_cpu_instructions_total{cpu=\"0\",path=\"a\\\"b\\\\c\\nd\"} 12345678901234\n"));
  CHECK_THAT(om, Catch::Contains("# TYPE hwperf_cpu_info gauge\n"));
  CHECK_THAT(om, Catch::EndsWith("# EOF\n"));
  const std::string text = serialize(sample_families(), ExpositionFormat::text_0_0_4);
  CHECK_THAT(text, Catch::Contains("# TYPE hwperf_cpu_instructions_total counter\n"));
  CHECK_THAT(text, !Catch::Contains("# EOF"));
}

TEST_CASE(
    "the text writer carries what prometheus-cpp's serializer carries, whole numbers in digits",
    "[exposition]") {
  auto counter = make_family(counter_name({"events"}), "Events.", prometheus::MetricType::Counter);
  add_counter(counter, {{"cpu", "0"}, {"path", "a\"b\\c\nd"}}, std::uint64_t{12345678901234});
  auto values = make_family(metric_name({"value", "forms"}), "Values of every form.",
                            prometheus::MetricType::Gauge);
  const double forms[] = {1e6,
                          16e6,
                          -3.5,
                          9007199254740991.0,
                          1e300,
                          -1e-300,
                          std::numeric_limits<double>::infinity(),
                          -std::numeric_limits<double>::infinity()};
  for (std::size_t i = 0; i < std::size(forms); ++i) {
    add_gauge(values, {{"i", std::to_string(i)}}, forms[i]);
  }
  // prometheus-cpp 1.0.1 writes HELP unescaped and values with 16 significant digits, so the
  // reference comparison uses plain HELP and values it writes exactly.
  const std::vector<prometheus::MetricFamily> families = {counter, values};
  const std::string ours = serialize(families, ExpositionFormat::text_0_0_4);
  const auto mine = test::parse_exposition(ours);
  const auto reference = test::parse_exposition(prometheus::TextSerializer().Serialize(families));
  REQUIRE(mine.size() == 1 + std::size(forms));
  REQUIRE(reference.size() == mine.size());
  for (std::size_t i = 0; i < mine.size(); ++i) {
    CAPTURE(i, mine[i].name);
    CHECK(mine[i].name == reference[i].name);
    CHECK(mine[i].labels == reference[i].labels);
    CHECK(mine[i].value == reference[i].value);
  }
  // Whole numbers are written in digits, not "1e+06".
  CHECK_THAT(ours, Catch::Contains("hwperf_value_forms{i=\"0\"} " +
                                   std::to_string(static_cast<long long>(forms[0])) + "\n"));
  CHECK_THAT(ours, Catch::Contains("hwperf_value_forms{i=\"3\"} " +
                                   std::to_string(static_cast<long long>(forms[3])) + "\n"));
  // What 16 digits would round, ours reads back exactly.
  auto inexact = make_family(metric_name({"inexact"}), "Inexact.", prometheus::MetricType::Gauge);
  const double sum = 0.1 + 0.2;
  add_gauge(inexact, {}, sum);
  for (auto format : {ExpositionFormat::text_0_0_4, ExpositionFormat::openmetrics_1_0_0}) {
    const auto read = test::parse_exposition(serialize({inexact}, format));
    REQUIRE(read.size() == 1);
    CHECK(read.front().value == sum);
  }
}

TEST_CASE("metric names are validated when built", "[exposition]") {
  CHECK(metric_name({"cpu", "info"}) == "hwperf_cpu_info");
  CHECK(counter_name({"rapl", "package", "joules"}) == "hwperf_rapl_package_joules_total");
  CHECK_THROWS_AS(metric_name({"cpu", "bad-name"}), std::invalid_argument);
  CHECK_THROWS_AS(metric_name({"", "x"}), std::invalid_argument);
  CHECK(to_snake_case("perf::PAGE-FAULTS") == "perf_page_faults");
  CHECK(to_snake_case("PAPI_L1_DCM") == "papi_l1_dcm");
}

TEST_CASE("HELP text is escaped in the text format too", "[exposition]") {
  const std::string text = serialize(sample_families(), ExpositionFormat::text_0_0_4);
  CHECK_THAT(text,
             Catch::Contains(
                 "# HELP hwperf_cpu_instructions_total Instructions \\\\ retired\\nper CPU.\n"));
}

TEST_CASE("the collector set refuses a missing collector instead of crashing later", "[http]") {
  CollectorSet set;
  CHECK_THROWS_AS(set.add(nullptr), std::invalid_argument);
  CHECK(set.names().empty());
}
