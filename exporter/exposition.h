// Exposition formats and content negotiation. Pure functions: no sockets, no CivetWeb.
#pragma once

#include <cstddef>
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

// gzip of a constant prefix followed by a different rest each time, as pigz joins independently
// compressed chunks: the prefix is deflated once, ending on a byte boundary with a block that is
// not the last (a sync flush), and each call deflates only the rest, in a stream of its own
// sized to it, and joins the two with the gzip header and a trailer whose CRC-32 is combined
// from both parts (crc32_combine). The output is one ordinary gzip stream (one member) of prefix
// + rest. The rest's stream never refers back into the prefix, so a scrape pays for its own
// series only: no copy of a compressor's state (zlib's deflateCopy moves about 260 KiB).
class PrefixedGzip {
 public:
  explicit PrefixedGzip(std::string_view prefix);

  // Safe to call from several threads at once: only reads what the constructor made.
  std::string compress(std::string_view rest) const;

 private:
  std::string head_;  // the gzip header and the prefix's deflate blocks
  unsigned long prefix_crc_ = 0;
  std::size_t prefix_size_ = 0;
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
