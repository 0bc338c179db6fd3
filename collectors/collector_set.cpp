#include "collectors/collector_set.h"

#include <chrono>
#include <exception>
#include <string>

#include "collectors/metrics.h"
#include "config/log.h"

namespace hwperf {

void CollectorSet::add(std::unique_ptr<Collector> collector) {
  collectors_.push_back(std::move(collector));
}

std::vector<std::string> CollectorSet::names() const {
  std::vector<std::string> out;
  for (const auto& collector : collectors_) out.push_back(collector->name());
  return out;
}

std::vector<prometheus::MetricFamily> CollectorSet::collect() const {
  auto success = make_family(metric_name({"scrape", "collector", "success"}),
                             "Whether the collector succeeded on this scrape (1) or failed (0).",
                             prometheus::MetricType::Gauge);
  auto duration = make_family(metric_name({"scrape", "collector", "duration", "seconds"}),
                              "Time the collector took on this scrape.",
                              prometheus::MetricType::Gauge);
  std::vector<prometheus::MetricFamily> families;
  for (const auto& collector : collectors_) {
    const std::string name = collector->name();
    std::vector<prometheus::MetricFamily> produced;
    bool ok = true;
    const auto start = std::chrono::steady_clock::now();
    try {
      collector->collect(produced);
    } catch (const std::exception& e) {
      ok = false;
      log::debug("collector " + name + " failed: " + e.what());
    } catch (...) {
      ok = false;
      log::debug("collector " + name + " failed with a non-standard exception");
    }
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    // A failed collector contributes nothing partial: half a scrape is worse than none.
    if (ok) {
      for (auto& family : produced) families.push_back(std::move(family));
    }
    add_gauge(success, {{"collector", name}}, ok ? 1.0 : 0.0);
    add_gauge(duration, {{"collector", name}}, elapsed.count());
  }
  families.push_back(std::move(duration));
  families.push_back(std::move(success));
  return families;
}

}  // namespace hwperf
