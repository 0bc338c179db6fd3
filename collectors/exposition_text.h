// The two exposition formats' text: Prometheus text 0.0.4 and OpenMetrics 1.0.0, written from
// families (append_families) or, for a family whose series are fixed at startup, from pieces made
// once (family_header, series_prefix) and a value per scrape (append_value): both give the same
// bytes, since the first is built from the second. Pure functions: no sockets, no collectors.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <prometheus/metric_family.h>

namespace hwperf {

enum class ExpositionFormat { text_0_0_4, openmetrics_1_0_0 };

// Appends the families without the end-of-exposition marker, so that families serialized once
// at startup and those of each scrape join into one exposition.
void append_families(std::string& out, const std::vector<prometheus::MetricFamily>& families,
                     ExpositionFormat format);
// What closes an exposition: "# EOF\n" in OpenMetrics, nothing in the text format.
std::string_view end_of_exposition(ExpositionFormat format);
// A whole exposition: append_families, then end_of_exposition.
std::string serialize(const std::vector<prometheus::MetricFamily>& families,
                      ExpositionFormat format);

// The HELP and TYPE lines of a family (its samples aside). Throws std::logic_error for a
// summary or histogram, which this exporter never writes.
std::string family_header(const prometheus::MetricFamily& family, ExpositionFormat format);
// A sample line of the family up to its value: name, labels and the space after them.
std::string series_prefix(const prometheus::MetricFamily& family,
                          const std::vector<prometheus::ClientMetric::Label>& labels,
                          ExpositionFormat format);
// The value and the line's end, after a series_prefix.
void append_value(std::string& out, double value);

}  // namespace hwperf
