#pragma once

#include <string>
#include <utility>
#include <vector>

#include <prometheus/metric_family.h>

namespace hwperf {

const char* exporter_version();
const char* exporter_revision();

// hwperf_build_info{version,revision,<library>_version...} 1. Library versions are passed in
// (label, value) because papi.h and hwloc.h each belong to one module; the registry knows them.
prometheus::MetricFamily build_info_family(
    const std::vector<std::pair<std::string, std::string>>& libraries);

}  // namespace hwperf
