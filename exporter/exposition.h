// Exposition formats and content negotiation. Pure functions: no sockets, no CivetWeb.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <prometheus/metric_family.h>

namespace hwperf {

enum class ExpositionFormat { text_0_0_4, openmetrics_1_0_0 };

// Picks the format from an HTTP Accept header the way Prometheus' own client libraries do:
// OpenMetrics 1.0.0 when the client weights it above the text format, text otherwise (including
// an absent or unparseable header).
ExpositionFormat negotiate_format(std::string_view accept);
const char* content_type(ExpositionFormat format);

// Whether an Accept-Encoding header allows gzip (q > 0 for "gzip" or "*").
bool accepts_gzip(std::string_view accept_encoding);
std::string gzip_compress(std::string_view data);

std::string serialize(const std::vector<prometheus::MetricFamily>& families,
                      ExpositionFormat format);

}  // namespace hwperf
