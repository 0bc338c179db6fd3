#include "collectors/build_info.h"

#include "collectors/metrics.h"

namespace hwperf {

const char* exporter_version() { return HWPERF_VERSION; }
const char* exporter_revision() { return HWPERF_REVISION; }

prometheus::MetricFamily build_info_family(
    const std::vector<std::pair<std::string, std::string>>& libraries) {
  auto family =
      make_gauge_family({"build", "info"},
                        "A metric with a constant '1' value labelled by the exporter's version "
                        "and revision and the PAPI and hwloc library versions it runs with.");
  Labels labels = {{"version", exporter_version()}, {"revision", exporter_revision()}};
  labels.insert(labels.end(), libraries.begin(), libraries.end());
  add_gauge(family, labels, 1.0);
  return family;
}

}  // namespace hwperf
