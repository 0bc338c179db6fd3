// The live topology page (/topology): the machine drawn as nested boxes (package > NUMA node >
// L3 > L2 > core > hardware thread) with each hardware thread coloured by the rate of a family
// the reader picks. The HTML is rendered once from the Topology at startup (the shape cannot
// change while the process runs); the browser polls /topology.json, which holds raw totals read
// through the same CollectorSet::collect() as a scrape, and computes rates itself, so the server
// keeps nothing per client. Script and style are served from the exporter's own paths so that
// the Content-Security-Policy can forbid everything inline.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <prometheus/metric_family.h>

#include "web/http.h"
#include "topology/topology.h"

namespace hwperf {

// Lowest-cost readable size as lstopo prints cache sizes: KB below 10 MiB, MB below 10 GiB, then
// GB and TB, rounded to nearest ("1024KB", "16MB", "48KB").
std::string lstopo_size(std::uint64_t bytes);

// The /topology.json body: every counter family whose series carry a `cpu` label (or `core` and
// `package`, or only `package` as RAPL's energy does), with its raw totals grouped by the labels
// that are not topology labels, and `timestamp` (seconds since the epoch) of the read. Families
// without any of those labels (machine-wide) and gauges are left out: a rate is drawn.
//   {"timestamp":1732456789.123,"families":[
//     {"name":"hwperf_cpu_clock_seconds_total","help":"...","scope":"cpu",
//      "series":[{"labels":{},"cpu":[0,1],"value":[12.5,13.1]}]},
//     {"name":"hwperf_rapl_package_joules_total","help":"...","scope":"package",
//      "series":[{"labels":{},"package":[0,1],"die":[0,0],"value":[812.4,790.2]}]}]}
// `labels` holds what tells series of one family apart besides their place (a future per-target
// family would carry {"target":"..."} here, one entry per target).
std::string topology_json(const std::vector<prometheus::MetricFamily>& families,
                          double timestamp_seconds);

class TopologyPage {
 public:
  // Renders the page for `topology`; `telemetry_path` is linked from its header.
  TopologyPage(const Topology& topology, const std::string& telemetry_path);

  // The paths this page answers (the HTML, its JSON, its script and its style).
  static bool serves(std::string_view path);
  // The response for a request of one of serves()' paths; `collect` is the scrape's own
  // collection, called only for the JSON, which is gzipped when `gzip` (the client accepts it,
  // as the router negotiates for /metrics).
  template <typename Collect>
  HttpResponse respond(const HttpRequest& request, const Collect& collect, bool gzip) const {
    if (request.path == kJsonPath) return json_response(collect(), gzip);
    return static_response(request.path);
  }

  const std::string& html() const { return html_; }

  static constexpr std::string_view kPagePath = "/topology";
  static constexpr std::string_view kJsonPath = "/topology.json";
  static constexpr std::string_view kScriptPath = "/topology.js";
  static constexpr std::string_view kStylePath = "/topology.css";

 private:
  HttpResponse json_response(const std::vector<prometheus::MetricFamily>& families,
                             bool gzip) const;
  HttpResponse static_response(std::string_view path) const;

  std::string html_;
};

// The static script and style (topology_assets.cpp).
std::string_view topology_page_script();
std::string_view topology_page_style();
// The Content-Security-Policy every /topology* response carries.
std::string_view topology_page_csp();

}  // namespace hwperf
