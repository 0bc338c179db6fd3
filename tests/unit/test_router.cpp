// The router without sockets (authentication and limits: test_admission.cpp).
#include "tests/catch.hpp"

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "collectors/build_info.h"
#include "collectors/metrics.h"
#include "exporter/router.h"
#include "tests/support/support.h"

using namespace hwperf;

namespace {}  // namespace

namespace {

// One family built at startup and one counter that moves on every scrape.
class ConstantAndMoving final : public Collector, public ConstantFamilies {
 public:
  std::string name() const override { return "constant_and_moving"; }
  void collect(std::vector<prometheus::MetricFamily>& out) override {
    auto moving = make_family(counter_name({"moving"}), "Moves.", prometheus::MetricType::Counter);
    add_counter(moving, {}, ++scrapes_);
    out.push_back(std::move(moving));
  }
  void collect_constant(std::vector<prometheus::MetricFamily>& out) const override {
    auto fixed = make_family(metric_name({"fixed", "info"}), "Never changes.",
                             prometheus::MetricType::Gauge);
    add_gauge(fixed, {{"cpu", "0"}}, 1.0);
    out.push_back(std::move(fixed));
    ++constant_calls;
  }
  mutable int constant_calls = 0;

 private:
  std::atomic<std::uint64_t> scrapes_{0};
};

}  // namespace

TEST_CASE("constant families are gathered once and served in every scrape with the moving ones",
          "[http]") {
  auto collector = std::make_unique<ConstantAndMoving>();
  const ConstantAndMoving* probe = collector.get();
  CollectorSet collectors;
  collectors.add(std::move(collector));
  const Exporter exporter("/metrics", std::move(collectors), build_info_family({}));
  // At startup only: the collector set reads them to check family names, the exporter to
  // serialize them.
  const auto calls_at_startup = probe->constant_calls;
  CHECK(calls_at_startup >= 1);
  HttpRequest request = test::get_request("/metrics");
  for (const char* accept :
       {"text/plain;version=0.0.4", "application/openmetrics-text;version=1.0.0"}) {
    CAPTURE(accept);
    request.accept = accept;
    const std::string first = exporter.handle(request).body;
    const std::string second = exporter.handle(request).body;
    const auto before = test::parse_exposition(first);
    const auto after = test::parse_exposition(second);
    for (const auto* body : {&first, &second}) {
      CHECK(test::occurrences(*body, "# TYPE hwperf_fixed_info gauge") == 1);
      CHECK(test::occurrences(*body, "# TYPE hwperf_build_info gauge") == 1);
      CHECK(test::occurrences(*body, "# EOF") ==
            (request.accept.rfind("application/openmetrics", 0) == 0 ? 1u : 0u));
    }
    REQUIRE(test::find_samples(before, "hwperf_fixed_info", {{"cpu", "0"}}).size() == 1);
    const double moved_from = test::find_samples(before, "hwperf_moving_total", {}).front().value;
    const double moved_to = test::find_samples(after, "hwperf_moving_total", {}).front().value;
    CHECK(moved_to == moved_from + 1);
  }
  CHECK(probe->constant_calls == calls_at_startup);  // no scrape gathers them again
  // --once and the benchmark see the same families as a scrape.
  const auto gathered = exporter.gather();
  CHECK(std::count_if(gathered.begin(), gathered.end(), [](const prometheus::MetricFamily& f) {
          return f.name == "hwperf_fixed_info";
        }) == 1);
}

TEST_CASE("concurrent scrapes share the constant text and the saved gzip state",
          "[http][concurrency]") {
  CollectorSet collectors;
  collectors.add(std::make_unique<ConstantAndMoving>());
  const Exporter exporter("/metrics", std::move(collectors), build_info_family({}));
  constexpr int kThreads = 8;
  constexpr int kScrapes = 25;
  std::atomic<int> complete{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      HttpRequest request = test::get_request("/metrics");
      request.accept = t % 2 ? "application/openmetrics-text;version=1.0.0" : "";
      request.accept_encoding = t % 4 < 2 ? "gzip" : "";
      for (int i = 0; i < kScrapes; ++i) {
        const HttpResponse response = exporter.handle(request);
        const std::string body =
            request.accept_encoding.empty() ? response.body : test::gunzip(response.body);
        if (response.status == 200 &&
            test::occurrences(body, "hwperf_fixed_info{cpu=\"0\"} 1") == 1 &&
            test::occurrences(body, "\nhwperf_moving_total ") == 1) {
          ++complete;
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(complete == kThreads * kScrapes);
}
