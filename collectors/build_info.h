#pragma once

#include <string>

#include <prometheus/metric_family.h>

namespace hwperf {

const char* exporter_version();
const char* exporter_revision();

// hwperf_build_info{version,revision,papi_version,hwloc_version} 1. Library versions are passed
// in because papi.h and hwloc.h each belong to one module.
prometheus::MetricFamily build_info_family(const std::string& papi_version,
                                           const std::string& hwloc_version);

}  // namespace hwperf
