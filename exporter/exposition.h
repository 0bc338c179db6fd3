// Exposition formats and content negotiation. Pure functions: no sockets, no CivetWeb.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <prometheus/metric_family.h>

#include "exporter/gzip.h"

namespace hwperf {

enum class ExpositionFormat { text_0_0_4, openmetrics_1_0_0 };

// Picks the format from an HTTP Accept header the way Prometheus' own client libraries do:
// OpenMetrics 1.0.0 when the client weights it above the text format, text otherwise (including
// an absent or unparseable header).
ExpositionFormat negotiate_format(std::string_view accept);
const char* content_type(ExpositionFormat format);

// Whether an Accept-Encoding header allows gzip (q > 0 for "gzip" or "*").
bool accepts_gzip(std::string_view accept_encoding);
// Appends the families without the end-of-exposition marker, so that families serialized once
// at startup and those of each scrape join into one exposition.
void append_families(std::string& out, const std::vector<prometheus::MetricFamily>& families,
                     ExpositionFormat format);
// What closes an exposition: "# EOF\n" in OpenMetrics, nothing in the text format.
std::string_view end_of_exposition(ExpositionFormat format);
// A whole exposition: append_families, then end_of_exposition.
std::string serialize(const std::vector<prometheus::MetricFamily>& families,
                      ExpositionFormat format);

}  // namespace hwperf
