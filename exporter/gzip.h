// gzip for HTTP responses. Pure functions and values: no sockets, no CivetWeb.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace hwperf {

std::string gzip_compress(std::string_view data);

// gzip of a constant prefix followed by a different rest each time, as pigz joins independently
// compressed chunks: the prefix is deflated once, ending on a byte boundary with a block that is
// not the last (a sync flush), and each call deflates only the rest, in a stream of its own
// sized to it (libdeflate, whose one call over a whole buffer is cheaper than a zlib stream), and
// joins the two with the gzip header and a trailer whose CRC-32 is combined from both parts
// (crc32_combine). The output is one ordinary gzip stream (one member) of prefix + rest. The
// rest's stream never refers back into the prefix, so a scrape pays for its own series only: no
// copy of a compressor's state (zlib's deflateCopy moves about 260 KiB).
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

}  // namespace hwperf
