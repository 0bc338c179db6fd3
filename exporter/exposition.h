// Exposition formats and content negotiation. Pure functions: no sockets, no CivetWeb.
#pragma once

#include <memory>
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

class DeflateStream;

// gzip of a constant prefix followed by a different rest each time: the prefix is compressed
// once, and each call copies the compressor's state after it and compresses only the rest. The
// output is one ordinary gzip stream (one member) of prefix + rest.
class PrefixedGzip {
 public:
  explicit PrefixedGzip(std::string_view prefix);
  ~PrefixedGzip();
  PrefixedGzip(PrefixedGzip&&) noexcept;
  PrefixedGzip& operator=(PrefixedGzip&&) noexcept;

  // Safe to call from several threads at once: the saved state is only read.
  std::string compress(std::string_view rest) const;

 private:
  std::unique_ptr<DeflateStream> prefix_stream_;
  std::string prefix_output_;  // what deflate emitted while taking in the prefix
};

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
