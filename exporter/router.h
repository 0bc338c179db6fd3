// The exporter as a value, once started: the collectors built at startup and the request
// router. No sockets here (exporter/http_server.h serves it), so routing is tested directly.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <prometheus/metric_family.h>

#include "collectors/collector_set.h"
#include "exporter/exposition.h"
#include "exporter/http.h"
#include "exporter/basic_auth.h"
#include "exporter/topology_page.h"

namespace hwperf {

class Exporter {
 public:
  // `telemetry_path` is where metrics are served; `build_info` is the constant build info family.
  // With users in `web_config`, every path but /-/healthy needs basic authentication; a hash that
  // can never match or would cost over a second per check throws ConfigError (basic_auth.h).
  // With a `topology`, /topology and its files are served too (exporter/topology_page.h).
  Exporter(std::string telemetry_path, CollectorSet collectors, prometheus::MetricFamily build_info,
           WebConfigFile web_config = {}, const Topology* topology = nullptr);

  // admit(), then route(): what one request gets. Thread-safe; never throws for a collector's
  // failure.
  HttpResponse handle(const HttpRequest& request) const;
  // The answer for a request that must not reach a route: 405 for methods other than GET and
  // HEAD, 404 for paths that do not exist (before any password is checked, so they cost no
  // bcrypt), 401 without valid credentials (every path but /-/healthy, which liveness probes
  // call without them and which says nothing). Nothing when the request may go on. The HTTP
  // server calls it before its concurrency limit, so unauthenticated clients never take a place.
  std::optional<HttpResponse> admit(const HttpRequest& request) const;
  // The telemetry path, / and /-/healthy, for a request admit() let through.
  HttpResponse route(const HttpRequest& request) const;
  // bcrypt runs so far (tests, benchmark).
  std::uint64_t bcrypt_runs() const { return auth_->bcrypt_runs(); }
  // Every family a scrape serves: the constant ones first, then this scrape's.
  std::vector<prometheus::MetricFamily> gather() const;

 private:
  // The body of a scrape in `format`: the constant families' text, serialized (and, for gzip,
  // compressed) once, followed by this scrape's families.
  std::string exposition(ExpositionFormat format, bool gzip) const;
  std::vector<prometheus::MetricFamily> constant_families() const;
  bool serves_topology(const std::string& path) const {
    return topology_page_ && TopologyPage::serves(path);
  }

  std::string telemetry_path_;
  CollectorSet collectors_;
  prometheus::MetricFamily build_info_;
  // The collectors' constant families and hwperf_build_info in each format (the families
  // themselves stay with their collectors: at 512 CPUs a second copy would cost megabytes).
  struct ConstantExposition {
    explicit ConstantExposition(const std::vector<prometheus::MetricFamily>& families);
    std::string text;
    std::string openmetrics;
    PrefixedGzip gzip_text;
    PrefixedGzip gzip_openmetrics;
  };
  const ConstantExposition constant_;
  std::unique_ptr<const BasicAuth> auth_;
  std::optional<TopologyPage> topology_page_;
};

}  // namespace hwperf
