#include "tests/catch.hpp"

#include <atomic>
#include <stdexcept>
#include <thread>

#include "collectors/collector_set.h"
#include "collectors/metrics.h"
#include "collectors/build_info.h"
#include "exporter/router.h"
#include "web/http_server.h"
#include "tests/support/http_clients.h"
#include "tests/support/support.h"

using namespace hwperf;

namespace {
class FixedCollector : public Collector {
 public:
  explicit FixedCollector(double value) : value_(value) {}
  std::string name() const override { return "fixed"; }
  void collect(std::vector<prometheus::MetricFamily>& out) override {
    auto family = make_family(counter_name({"test", "events"}), "Test events.",
                              prometheus::MetricType::Counter);
    add_counter(family, {{"cpu", "0"}}, value_);
    out.push_back(std::move(family));
  }

 private:
  double value_;
};

// Series of which some move on every scrape, some every few, and some never, so that gzip
// scrapes both copy lines from the last one and deflate them anew.
class MovingCollector : public Collector {
 public:
  std::string name() const override { return "moving"; }
  void collect(std::vector<prometheus::MetricFamily>& out) override {
    const std::uint64_t scrape = ++scrapes_;
    auto family = make_family(counter_name({"test", "moving"}), "Moves at its own pace per CPU.",
                              prometheus::MetricType::Counter);
    for (std::uint64_t cpu = 0; cpu < kCpus; ++cpu) {
      add_counter(family, {{"cpu", std::to_string(cpu)}}, scrape / (cpu + 1) * 1000003);
    }
    out.push_back(std::move(family));
  }
  static constexpr std::uint64_t kCpus = 16;

 private:
  std::atomic<std::uint64_t> scrapes_{0};
};

class ThrowingCollector : public Collector {
 public:
  std::string name() const override { return "broken"; }
  void collect(std::vector<prometheus::MetricFamily>& out) override {
    auto family = make_family(metric_name({"test", "partial"}), "Never exported.",
                              prometheus::MetricType::Gauge);
    add_gauge(family, {}, 1);
    out.push_back(std::move(family));
    throw std::runtime_error("device vanished");
  }
};

Exporter make_exporter(double value) {
  CollectorSet set;
  set.add(std::make_unique<FixedCollector>(value));
  set.add(std::make_unique<ThrowingCollector>());
  return Exporter(Config{}.web.telemetry_path, std::move(set),
                  build_info_family({{"papi_version", "papi-v"}, {"hwloc_version", "hwloc-v"}}));
}

HttpServerOptions served_options() {
  HttpServerOptions options = test::http_clients::loopback_options(10000);
  options.worker_threads = 8;
  return options;
}

struct Served {
  Exporter exporter;
  HttpServer server;
  explicit Served(double value)
      : exporter(make_exporter(value)),
        server(served_options(), [this](const HttpRequest& r) { return exporter.handle(r); }) {}
};
}  // namespace

TEST_CASE("a collector that throws only fails itself", "[http]") {
  const double value = 42;
  const Exporter exporter = make_exporter(value);
  const auto samples =
      test::parse_exposition(exporter.handle(HttpRequest{"GET", "/metrics", "", "", ""}).body);
  CHECK(test::find_samples(samples, "hwperf_scrape_collector_success", {{"collector", "broken"}})
            .at(0)
            .value == 0);
  CHECK(test::find_samples(samples, "hwperf_scrape_collector_success", {{"collector", "fixed"}})
            .at(0)
            .value == 1);
  CHECK(test::find_samples(samples, "hwperf_test_events_total", {{"cpu", "0"}}).at(0).value ==
        value);
  // Nothing partial from the failed collector.
  CHECK(test::find_samples(samples, "hwperf_test_partial").empty());
  CHECK(test::find_samples(samples, "hwperf_scrape_collector_duration_seconds").size() == 2);
  const auto info = test::find_samples(samples, "hwperf_build_info");
  REQUIRE(info.size() == 1);
  CHECK(info[0].labels.at("papi_version") == "papi-v");
  CHECK(info[0].labels.at("hwloc_version") == "hwloc-v");
}

TEST_CASE("routes, status codes and content types over real HTTP", "[http]") {
  const double value = 7;
  Served served(value);
  const unsigned port = served.server.port();
  REQUIRE(port != 0);

  const auto metrics = test::http_get(port, "/metrics");
  CHECK(metrics.status == 200);
  CHECK(metrics.headers.at("content-type") == "text/plain; version=0.0.4; charset=utf-8");
  CHECK(metrics.headers.count("content-encoding") == 0);
  CHECK(test::find_samples(test::parse_exposition(metrics.body), "hwperf_test_events_total")
            .at(0)
            .value == value);

  const auto om =
      test::http_get(port, "/metrics", {{"Accept", "application/openmetrics-text;version=1.0.0"}});
  CHECK(om.status == 200);
  CHECK(om.headers.at("content-type") ==
        "application/openmetrics-text; version=1.0.0; charset=utf-8");
  CHECK_THAT(om.body, Catch::EndsWith("# EOF\n"));
  CHECK_THAT(om.body, Catch::Contains("# TYPE hwperf_test_events counter"));

  const auto zipped = test::http_get(port, "/metrics", {{"Accept-Encoding", "gzip"}});
  CHECK(zipped.status == 200);
  CHECK(zipped.headers.at("content-encoding") == "gzip");
  CHECK(static_cast<unsigned char>(zipped.body.at(0)) == 0x1f);
  CHECK(std::stoul(zipped.headers.at("content-length")) == zipped.body.size());

  const auto healthy = test::http_get(port, "/-/healthy");
  CHECK(healthy.status == 200);

  const auto landing = test::http_get(port, "/");
  CHECK(landing.status == 200);
  CHECK_THAT(landing.headers.at("content-type"), Catch::StartsWith("text/html"));
  CHECK_THAT(landing.body, Catch::Contains("href=\"/metrics\""));
  CHECK_THAT(landing.body, Catch::Contains("<li>fixed</li>") && Catch::Contains("<li>broken</li>"));

  const auto missing = test::http_get(port, "/nope");
  CHECK(missing.status == 404);
  CHECK(test::http_get(port, "/metrics/extra").status == 404);
  CHECK(test::http_get(port, "/metrics?x=1").status == 200);
  // No browser may take a text body (an error can echo what the client sent) for HTML.
  for (const auto* response : {&metrics, &zipped, &landing, &missing}) {
    CHECK(response->headers.at("x-content-type-options") == "nosniff");
  }
  // gzip;q=0 refuses gzip even beside "*" (RFC 9110 12.5.3).
  const auto refused = test::http_get(port, "/metrics", {{"Accept-Encoding", "gzip;q=0, *"}});
  CHECK(refused.headers.count("content-encoding") == 0);
  CHECK_THAT(refused.body, Catch::StartsWith("# HELP"));
}

TEST_CASE("overlapping scrapes are all answered", "[http][concurrency]") {
  Served served(1);
  const unsigned port = served.server.port();
  std::atomic<int> ok{0};
  constexpr int kThreads = 16;
  constexpr int kRequests = 10;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kRequests; ++i) {
        const auto r = test::http_get(port, "/metrics");
        if (r.status == 200 && r.body.find("hwperf_test_events_total") != std::string::npos) ++ok;
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(ok == kThreads * kRequests);
}

TEST_CASE("overlapping gzip scrapes are all answered whole", "[http][concurrency]") {
  CollectorSet set;
  set.add(std::make_unique<FixedCollector>(1));
  set.add(std::make_unique<MovingCollector>());
  const Exporter exporter(Config{}.web.telemetry_path, std::move(set), build_info_family({}));
  HttpServer server(served_options(), [&](const HttpRequest& r) { return exporter.handle(r); });
  const unsigned port = server.port();
  std::atomic<int> whole{0};
  constexpr int kThreads = 16;
  constexpr int kRequests = 20;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      test::Headers headers = {{"Accept-Encoding", "gzip"}};
      if (t % 2 == 1) headers.push_back({"Accept", "application/openmetrics-text;version=1.0.0"});
      for (int i = 0; i < kRequests; ++i) {
        const auto r = test::http_get(port, "/metrics", headers);
        if (r.status != 200 || r.headers.count("content-encoding") == 0) continue;
        const std::string body = test::gunzip(r.body);
        const auto samples = test::parse_exposition(body);
        const bool openmetrics =
            body.size() >= 6 && body.compare(body.size() - 6, 6, "# EOF\n") == 0;
        if (openmetrics == (t % 2 == 1) &&
            test::find_samples(samples, "hwperf_test_moving_total").size() ==
                MovingCollector::kCpus &&
            test::find_samples(samples, "hwperf_test_events_total").size() == 1) {
          ++whole;
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(whole == kThreads * kRequests);
}

TEST_CASE("listen addresses", "[http]") {
  CHECK(ListenAddress::parse(":9477").civetweb_ports() == "9477");
  CHECK(ListenAddress::parse("127.0.0.1:9477").civetweb_ports() == "127.0.0.1:9477");
  if (http_server_supports_ipv6()) {
    CHECK(ListenAddress::parse("[::1]:80").civetweb_ports() == "[::1]:80");
  } else {
    CHECK_THROWS_WITH(ListenAddress::parse("[::1]:80"), Catch::Contains("without IPv6 support"));
  }
  const std::string localhost = ListenAddress::parse("localhost:1").civetweb_ports();
  CHECK(localhost == "127.0.0.1:1");
  // Parsed once into everything its users need.
  const ListenAddress any = ListenAddress::parse(":9477");
  CHECK(any.host().empty());
  CHECK(any.port() == 9477u);
  CHECK(any.reachable_host() == "127.0.0.1");
  const ListenAddress named = ListenAddress::parse("localhost:0");
  CHECK(named.host() == "localhost");
  CHECK(named.numeric_host() == "127.0.0.1");
  CHECK(named.text() == "localhost:0");
  for (const char* bad :
       {"9477", ":99999", "1.2.3.4:x", "[::1:80", "[zz]:80", "no.such.host.invalid:1"}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH(ListenAddress::parse(bad), Catch::Contains(bad));
  }
}
