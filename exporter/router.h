// The exporter as a value, once started: the collectors built at startup and the request
// router. No sockets here (exporter/http_server.h serves it), so routing is tested directly.
#pragma once

#include <string>
#include <vector>

#include <prometheus/metric_family.h>

#include "collectors/collector_set.h"
#include "exporter/http.h"
#include "exporter/basic_auth.h"

namespace hwperf {

class Exporter {
 public:
  // `telemetry_path` is where metrics are served; `build_info` is the constant build info family.
  // With users in `web_config`, every path but /-/healthy (which liveness probes call without
  // credentials, and which says nothing) needs basic authentication.
  Exporter(std::string telemetry_path, CollectorSet collectors,
           prometheus::MetricFamily build_info, WebConfigFile web_config = {});

  // Routes the telemetry path, /, /-/healthy; 404 otherwise, 405 for methods other than GET and
  // HEAD. Thread-safe; never throws for a collector's failure.
  HttpResponse handle(const HttpRequest& request) const;
  std::vector<prometheus::MetricFamily> gather() const;

 private:
  std::string telemetry_path_;
  CollectorSet collectors_;
  prometheus::MetricFamily build_info_;  // constant: built once, copied into each scrape
  WebConfigFile web_config_;
};

}  // namespace hwperf
