#include "collectors/prepared_family.h"

namespace hwperf {

PreparedFamily::PreparedFamily(const prometheus::MetricFamily& shape) {
  for (const auto format : {ExpositionFormat::text_0_0_4, ExpositionFormat::openmetrics_1_0_0}) {
    header_[static_cast<std::size_t>(format)] = family_header(shape, format);
  }
  series_.reserve(shape.metric.size());
  for (const auto& metric : shape.metric) {
    auto& prefixes = series_.emplace_back();
    for (const auto format : {ExpositionFormat::text_0_0_4, ExpositionFormat::openmetrics_1_0_0}) {
      prefixes[static_cast<std::size_t>(format)] = series_prefix(shape, metric.label, format);
    }
  }
}

}  // namespace hwperf
