// Content negotiation, and the formats' text (collectors/exposition_text.h, where collectors
// write it too). Pure functions: no sockets, no CivetWeb.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <prometheus/metric_family.h>

#include "collectors/exposition_text.h"

namespace hwperf {

// Picks the format from an HTTP Accept header the way Prometheus' own client libraries do:
// OpenMetrics 1.0.0 when the client weights it above the text format, text otherwise (including
// an absent or unparseable header).
ExpositionFormat negotiate_format(std::string_view accept);
const char* content_type(ExpositionFormat format);

// Whether an Accept-Encoding header allows gzip (q > 0 for "gzip" or "*").
bool accepts_gzip(std::string_view accept_encoding);

}  // namespace hwperf
