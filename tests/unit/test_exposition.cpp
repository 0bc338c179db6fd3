#include "tests/catch.hpp"

#include <zlib.h>

#include "collectors/collector_set.h"
#include "collectors/metrics.h"
#include "exporter/exposition.h"
#include "tests/support.h"

using namespace hwperf;

namespace {
std::string gunzip(const std::string& data) {
  z_stream stream{};
  REQUIRE(inflateInit2(&stream, 15 + 16) == Z_OK);
  std::string out(data.size() * 20 + 1024, '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  stream.avail_in = static_cast<uInt>(data.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  const int rc = inflate(&stream, Z_FINISH);
  inflateEnd(&stream);
  REQUIRE(rc == Z_STREAM_END);
  out.resize(stream.total_out);
  return out;
}

std::vector<prometheus::MetricFamily> sample_families() {
  auto counter = make_family(counter_name({"cpu", "instructions"}), "Instructions \\ retired\nper CPU.",
                             prometheus::MetricType::Counter);
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
      {"application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
       ExpositionFormat::openmetrics_1_0_0},
      {"text/plain;version=0.0.4;q=0.9,application/openmetrics-text;q=0.5", ExpositionFormat::text_0_0_4},
      {"application/openmetrics-text;version=0.0.1", ExpositionFormat::text_0_0_4},
      {"application/openmetrics-text;version=2.0.0", ExpositionFormat::text_0_0_4},
      {"application/openmetrics-text;q=0", ExpositionFormat::text_0_0_4},
      {"APPLICATION/OpenMetrics-Text ; Version=\"1.0.0\"", ExpositionFormat::openmetrics_1_0_0},
      {"garbage;;;,,", ExpositionFormat::text_0_0_4},
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
}

TEST_CASE("gzip output decompresses to the input", "[exposition]") {
  const std::string text = serialize(sample_families(), ExpositionFormat::text_0_0_4);
  const std::string compressed = gzip_compress(text);
  CHECK(compressed.size() > 10);
  CHECK(static_cast<unsigned char>(compressed[0]) == 0x1f);
  CHECK(static_cast<unsigned char>(compressed[1]) == 0x8b);
  CHECK(gunzip(compressed) == text);
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
  CHECK_THAT(om, Catch::Contains("# HELP hwperf_cpu_instructions Instructions \\\\ retired\\nper CPU.\n"));
  CHECK_THAT(om, Catch::Contains("\nhwperf_cpu_instructions_total{cpu=\"0\",path=\"a\\\"b\\\\c\\nd\"} 12345678901234\n"));
  CHECK_THAT(om, Catch::Contains("# TYPE hwperf_cpu_info gauge\n"));
  CHECK_THAT(om, Catch::EndsWith("# EOF\n"));
  const std::string text = serialize(sample_families(), ExpositionFormat::text_0_0_4);
  CHECK_THAT(text, Catch::Contains("# TYPE hwperf_cpu_instructions_total counter\n"));
  CHECK_THAT(text, !Catch::Contains("# EOF"));
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
  CHECK_THAT(text, Catch::Contains("# HELP hwperf_cpu_instructions_total Instructions \\\\ retired\\nper CPU.\n"));
}

TEST_CASE("the collector set refuses a missing collector instead of crashing later", "[http]") {
  CollectorSet set;
  CHECK_THROWS_AS(set.add(nullptr), std::invalid_argument);
  CHECK(set.names().empty());
}
