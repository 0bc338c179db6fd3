// The one place that calls collectors: it times each one, catches everything it throws, and adds
// hwperf_scrape_collector_{success,duration_seconds}{collector} (node_exporter collector.go
// execute()). An exception that reached CivetWeb's C threads would end the process.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <prometheus/metric_family.h>

#include "collectors/collector.h"

namespace hwperf {

class CollectorSet {
 public:
  CollectorSet();
  ~CollectorSet();
  CollectorSet(CollectorSet&&) noexcept;
  CollectorSet& operator=(CollectorSet&&) noexcept;

  // Throws std::invalid_argument for a null collector: a scrape would otherwise crash on it.
  // Throws ConfigError, naming where it was configured, for a family name (declared or
  // constant) that an earlier collector exports too.
  void add(std::unique_ptr<Collector> collector);
  std::vector<std::string> names() const;

  // Never throws for a collector's failure; safe to call from several threads at once.
  std::vector<prometheus::MetricFamily> collect() const;
  // Every collector's constant families, in registry order; called once, at startup, where a
  // failure is a startup error.
  std::vector<prometheus::MetricFamily> collect_constant() const;

 private:
  struct Entry;
  std::vector<std::unique_ptr<Entry>> entries_;
  std::map<std::string, std::string> family_owners_;  // OpenMetrics family name -> collector
};

}  // namespace hwperf
