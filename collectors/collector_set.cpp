#include "collectors/collector_set.h"

#include <stdexcept>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <string>

#include "collectors/collector_entry.h"
#include "collectors/metrics.h"
#include "collectors/prepared_family.h"
#include "common/log.h"
#include "common/text.h"
#include "config/errors.h"

namespace hwperf {
namespace {
const std::string& success_name() {
  static const std::string name = metric_name({"scrape", "collector", "success"});
  return name;
}
const std::string& duration_name() {
  static const std::string name = metric_name({"scrape", "collector", "duration", "seconds"});
  return name;
}
// OpenMetrics types a counter family without "_total": hwperf_cpu_info_total and the gauge
// hwperf_cpu_info are one family name there.
std::string openmetrics_family(const std::string& name) {
  return ends_with(name, "_total") ? name.substr(0, name.size() - 6) : name;
}
}  // namespace

struct CollectorSet::Entry {
  std::unique_ptr<Collector> collector;
  Capabilities capabilities;  // found once, when it was added
  std::string name;
  // A failing collector is logged when it starts failing and when it recovers, not on every
  // scrape: Prometheus may scrape every second, and the metric already says it each time.
  std::atomic<bool> failing{false};
};

// The self metrics, as collect_text writes them: the families prepared once per set of
// collectors (collectors/prepared_family.h), a sample per collector in the set's order.
struct CollectorSet::SelfText {
  PreparedFamily duration;
  PreparedFamily success;
};

CollectorSet::CollectorSet() { prepare_self_text(); }
CollectorSet::~CollectorSet() = default;
CollectorSet::CollectorSet(CollectorSet&&) noexcept = default;
CollectorSet& CollectorSet::operator=(CollectorSet&&) noexcept = default;

std::vector<std::string> FamilyOwners::claim(const std::string& collector,
                                             const std::vector<FamilyDeclaration>& families) {
  std::vector<std::string> problems;
  for (const auto& family : families) {
    const auto [taken, inserted] = owners_.emplace(openmetrics_family(family.name), collector);
    if (inserted || taken->second == collector) continue;
    problems.push_back((family.where.empty() ? "" : family.where + ": ") + "the " + collector +
                       " collector would export " + family.name + ", which is the " +
                       taken->second + " collector's family " + taken->first +
                       " (in OpenMetrics a counter is named without _total); give it another "
                       "`metric:` name");
  }
  return problems;
}

void CollectorSet::add(std::unique_ptr<Collector> collector) {
  if (!collector) throw std::invalid_argument("collector set: a collector factory returned none");
  const auto families = exported_families(*collector);
  if (auto problems = family_owners_.claim(collector->name(), families); !problems.empty()) {
    throw ConfigError(std::move(problems));
  }
  auto entry = std::make_unique<Entry>();
  entry->capabilities = capabilities_of(*collector);
  entry->name = collector->name();
  entry->collector = std::move(collector);
  entries_.push_back(std::move(entry));
  prepare_self_text();
}

std::vector<std::string> CollectorSet::names() const {
  std::vector<std::string> out;
  for (const auto& entry : entries_) out.push_back(entry->name);
  return out;
}

std::vector<prometheus::MetricFamily> CollectorSet::collect_constant() const {
  std::vector<prometheus::MetricFamily> families;
  for (const auto& entry : entries_) {
    if (entry->capabilities.constant) entry->capabilities.constant->collect_constant(families);
  }
  return families;
}

std::vector<std::string> CollectorSet::target_names() const {
  std::vector<std::string> names;
  for (const auto& entry : entries_) {
    if (!entry->capabilities.targets) continue;
    for (auto& name : entry->capabilities.targets->target_names()) names.push_back(std::move(name));
  }
  return names;
}

void CollectorSet::refresh() const {
  for (const auto& entry : entries_) {
    if (!entry->capabilities.targets) continue;
    try {
      entry->capabilities.targets->refresh();
    } catch (const std::exception& e) {
      log::warn("collector " + entry->name + ": refresh failed: " + e.what());
    } catch (...) {
      log::warn("collector " + entry->name + ": refresh failed: a non-standard exception");
    }
  }
}

std::vector<prometheus::MetricFamily> CollectorSet::collect() const { return collect({}); }

template <typename Run>
bool CollectorSet::run_collector(Entry& entry, Run&& run, double& seconds) {
  std::string failure;
  const auto start = std::chrono::steady_clock::now();
  try {
    run(*entry.collector);
  } catch (const std::exception& e) {
    failure = e.what();
    if (failure.empty()) failure = "unknown error";
  } catch (...) {
    failure = "a non-standard exception";
  }
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  seconds = elapsed.count();
  const bool ok = failure.empty();
  if (!ok && !entry.failing.exchange(true)) {
    log::warn("collector " + entry.name + " failed: " + failure +
              " (hwperf_scrape_collector_success{collector=\"" + entry.name +
              "\"} is 0 until it recovers)");
  } else if (ok && entry.failing.exchange(false)) {
    log::info("collector " + entry.name + " recovered");
  }
  return ok;
}

namespace {

struct SelfFamilies {
  prometheus::MetricFamily success = make_family(
      success_name(), "Whether the collector succeeded on this scrape (1) or failed (0).",
      prometheus::MetricType::Gauge);
  prometheus::MetricFamily duration = make_family(
      duration_name(), "Time the collector took on this scrape.", prometheus::MetricType::Gauge);

  void add(const std::string& collector, bool ok, double seconds) {
    add_gauge(success, {{"collector", collector}}, ok ? 1.0 : 0.0);
    add_gauge(duration, {{"collector", collector}}, seconds);
  }
};

}  // namespace

std::vector<prometheus::MetricFamily> CollectorSet::collect(
    const std::vector<std::string>& targets) const {
  SelfFamilies self;
  std::vector<prometheus::MetricFamily> families;
  for (const auto& entry : entries_) {
    std::vector<std::string> own;  // the targets asked for that are this collector's
    if (!targets.empty()) {
      if (!entry->capabilities.targets) continue;
      for (const auto& name : entry->capabilities.targets->target_names()) {
        if (std::find(targets.begin(), targets.end(), name) != targets.end()) own.push_back(name);
      }
      if (own.empty()) continue;
    }
    std::vector<prometheus::MetricFamily> produced;
    double seconds = 0;
    const bool ok = run_collector(
        *entry,
        [&](Collector& collector) {
          if (targets.empty()) {
            collector.collect(produced);
          } else {
            entry->capabilities.targets->collect_targets(produced, own);
          }
        },
        seconds);
    // A failed collector contributes nothing partial: half a scrape is worse than none.
    if (ok) {
      for (auto& family : produced) families.push_back(std::move(family));
    }
    self.add(entry->name, ok, seconds);
  }
  families.push_back(std::move(self.duration));
  families.push_back(std::move(self.success));
  return families;
}

void CollectorSet::prepare_self_text() {
  SelfFamilies shape;
  for (const auto& entry : entries_) shape.add(entry->name, true, 0.0);
  self_text_ = std::make_unique<SelfText>(
      SelfText{PreparedFamily(shape.duration), PreparedFamily(shape.success)});
}

void CollectorSet::collect_text(std::string& out, ExpositionFormat format) const {
  std::vector<double> durations;
  std::vector<double> successes;
  for (const auto& entry : entries_) {
    const std::size_t before = out.size();
    double seconds = 0;
    const bool ok = run_collector(
        *entry,
        [&](Collector& collector) {
          if (entry->capabilities.text) {
            entry->capabilities.text->collect_text(out, format);
          } else {
            std::vector<prometheus::MetricFamily> families;
            collector.collect(families);
            append_families(out, families, format);
          }
        },
        seconds);
    // As in collect(): nothing partial of a failed collector.
    if (!ok) out.resize(before);
    durations.push_back(seconds);
    successes.push_back(ok ? 1.0 : 0.0);
  }
  // As collect()'s families would serialize: the durations, then the successes, each family's
  // header even when there is no collector.
  for (const auto& [family, values] : {std::pair{&self_text_->duration, &durations},
                                       std::pair{&self_text_->success, &successes}}) {
    PreparedFamily::Writer writer(*family, out, format);
    writer.open();
    for (std::size_t i = 0; i < values->size(); ++i) writer.sample(i, (*values)[i]);
  }
}

}  // namespace hwperf
