// The collectors this exporter has, each registered once with what the exporter needs to know
// about it (node_exporter's registerCollector): its name, whether the configuration enables it,
// how to build it, what --check-config says about it, and the library version it reports in
// hwperf_build_info. The exporter walks this list and names no collector itself.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <prometheus/metric_family.h>

#include "collectors/collector.h"
#include "collectors/collector_set.h"
#include "common/open_files.h"
#include "config/config.h"
#include "topology/topology.h"

namespace hwperf {

struct CollectorEntry {
  const char* name;
  bool (*enabled)(const Config& config);
  // Builds the collector; throws ConfigError (exit 2) or std::runtime_error (exit 1).
  std::unique_ptr<Collector> (*make)(const Config& config, const Topology& topology);
  // --check-config: one line each on what this collector can do here. Throws like make().
  std::vector<std::string> (*check)(const Config& config, const Topology& topology);
  // The file descriptors the collector will hold open (common/open_files.h); null for none.
  FileNeed (*files)(const Config& config, const Topology& topology);
  // The hwperf_build_info label and value of the library the collector runs on, if any.
  const char* library_label;
  std::string (*library_version)();
};

const std::vector<CollectorEntry>& collector_registry();

// What every enabled collector will hold open, for the startup check of the open-file limit.
std::vector<FileNeed> collector_file_needs(const Config& config, const Topology& topology);

// Every enabled collector, in registry order.
CollectorSet build_collectors(const Config& config, const Topology& topology);

// hwperf_build_info with the exporter's version and revision and every registered library's
// version (whether or not its collector is enabled).
prometheus::MetricFamily registry_build_info();

}  // namespace hwperf
