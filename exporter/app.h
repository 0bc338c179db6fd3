// The exporter as a value: configuration, topology and collectors built once at startup, and the
// request router. main() only turns argv into run_exporter().
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "collectors/collector_set.h"
#include "config/config.h"
#include "exporter/http.h"
#include "topology/topology.h"

namespace hwperf {

class Exporter {
 public:
  // Builds every enabled collector. Throws ConfigError (exit 2) or std::runtime_error (exit 1).
  Exporter(Config config, Topology topology);
  // For tests: an exporter around collectors built elsewhere.
  Exporter(Config config, CollectorSet collectors, std::string papi_version,
           std::string hwloc_version);

  // Routes /metrics (the telemetry path), /, /-/healthy; 404 otherwise. Thread-safe; never
  // throws for a collector's failure.
  HttpResponse handle(const HttpRequest& request) const;
  std::vector<prometheus::MetricFamily> gather() const;

  const Config& config() const { return config_; }
  const CollectorSet& collectors() const { return collectors_; }

 private:
  Config config_;
  CollectorSet collectors_;
  prometheus::MetricFamily build_info_;  // constant: built once, copied into each scrape
};

CollectorSet build_collectors(const Config& config, const Topology& topology);

// The whole process: parse flags, load config, build, then serve until SIGTERM/SIGINT (or print
// once). Returns the process exit code: 0 ok, 1 runtime failure, 2 configuration error.
int run_exporter(const std::vector<std::string>& args);

}  // namespace hwperf
