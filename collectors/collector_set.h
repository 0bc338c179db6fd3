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

// Which collector exports each family name, compared as OpenMetrics names families (a counter
// without "_total"): the one check that no two collectors export one family, and the one place
// its message is written. The start and the dry run run it on the names the registry entries
// declare before anything is built (registry.h, check_family_names); CollectorSet::add runs it
// again on the collectors as built.
class FamilyOwners {
 public:
  // Claims `families` for `collector`. Returns one problem, naming where the name was configured
  // and the remedy, for each family an earlier collector claimed; a collector may repeat itself.
  std::vector<std::string> claim(const std::string& collector,
                                 const std::vector<FamilyDeclaration>& families);

 private:
  std::map<std::string, std::string> owners_;  // OpenMetrics family name -> collector
};

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
  // collect() written into a /metrics exposition in `format`, each collector through its
  // collect_text(), and the self metrics after them: the same text as collect()'s families
  // serialized. A failing collector's partial text is removed.
  void collect_text(std::string& out, ExpositionFormat format) const;
  // ?target=: only the collectors with targets, each for those of `targets` that are its own
  // (each must be one of target_names()); collect() when `targets` is empty.
  std::vector<prometheus::MetricFamily> collect(const std::vector<std::string>& targets) const;
  // Every collector's target names, in registry order.
  std::vector<std::string> target_names() const;
  // Every collector's refresh(); a failure is logged, never thrown.
  void refresh() const;
  // Every collector's constant families, in registry order; called once, at startup, where a
  // failure is a startup error.
  std::vector<prometheus::MetricFamily> collect_constant() const;

 private:
  struct Entry;
  struct SelfText;
  // The self metrics' families prepared with a series per collector, in the set's order.
  void prepare_self_text();
  // Runs one collector through `run`, timing it and catching what it throws; logs when it
  // starts failing and when it recovers. Returns whether it succeeded and its duration.
  template <typename Run>
  static bool run_collector(Entry& entry, Run&& run, double& seconds);
  std::vector<std::unique_ptr<Entry>> entries_;
  std::unique_ptr<SelfText> self_text_;
  FamilyOwners family_owners_;
};

}  // namespace hwperf
