// The exporter as a value, once started: the collectors built at startup and the request
// router. No sockets here (web/http_server.h serves it, behind web/admission.h), so routing is
// tested directly.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <prometheus/metric_family.h>

#include "collectors/collector_set.h"
#include "exporter/compression/gzip.h"
#include "exporter/exposition.h"
#include "exporter/topology_page/topology_page.h"
#include "web/http.h"

namespace hwperf {

class Exporter {
 public:
  // `telemetry_path` is where metrics are served; `build_info` is the constant build info family.
  // With a `topology`, /topology and its files are served too (exporter/topology_page/).
  Exporter(std::string telemetry_path, CollectorSet collectors, prometheus::MetricFamily build_info,
           const Topology* topology = nullptr);

  // Whether a route answers `path` (the admission layer answers 404 for the others before any
  // password is checked).
  bool serves(std::string_view path) const;
  // The telemetry path, / and /-/healthy (404 for anything else). Thread-safe; never throws for
  // a collector's failure. Methods, authentication and limits are web/admission.h's.
  // `?target=NAME` (repeatable) on the telemetry path serves only the collectors with targets,
  // for those targets, and hwperf_build_info; a name no collector has is a 400 listing them.
  HttpResponse route(const HttpRequest& request) const;
  HttpResponse handle(const HttpRequest& request) const { return route(request); }
  // Every family a scrape serves: the constant ones first, then this scrape's.
  std::vector<prometheus::MetricFamily> gather() const;
  // What the collectors discover, looked at again now (CollectorSet::refresh).
  void refresh() const { collectors_.refresh(); }

  // Scrapes of the telemetry path: a mark now, and whether a scrape that began after that mark
  // has been answered (its body made; the server then sends it). Served experiment mode lingers
  // until then, so that Prometheus reads the counts of the command's end.
  std::uint64_t scrape_mark() const { return scrapes_begun_.load(); }
  bool scraped_after(std::uint64_t mark) const { return scrapes_answered_.load() > mark; }

 private:
  // The body of a scrape in `format`: the constant families' text, serialized (and, for gzip,
  // compressed) once, followed by this scrape's families.
  std::string exposition(ExpositionFormat format, bool gzip) const;
  // ?target=: the families of those targets and hwperf_build_info, nothing cached.
  std::string target_exposition(ExpositionFormat format, bool gzip,
                                const std::vector<std::string>& targets) const;
  HttpResponse telemetry(const HttpRequest& request) const;
  std::vector<prometheus::MetricFamily> constant_families() const;
  bool serves_topology(std::string_view path) const {
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
  std::optional<TopologyPage> topology_page_;
  mutable std::atomic<std::uint64_t> scrapes_begun_{0};
  mutable std::atomic<std::uint64_t> scrapes_answered_{0};  // the latest begun of those answered
};

}  // namespace hwperf
