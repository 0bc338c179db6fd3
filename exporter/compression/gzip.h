// gzip for HTTP responses. Pure functions and values: no sockets, no CivetWeb.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "exporter/compression/trained_deflate.h"

namespace hwperf {

std::string gzip_compress(std::string_view data);

// gzip of a constant prefix followed by a different rest each time, as pigz joins independently
// compressed chunks: the prefix is deflated once (at zlib's best level, since only once), ending
// on a byte boundary with a block that is not the last (a sync flush), and each call deflates
// only the rest, in a block of its own, and joins the two with the gzip header and a trailer
// whose CRC-32 runs on from the prefix's over the rest. The output is one ordinary gzip stream
// (one member) of prefix + rest. The rest never refers back into the prefix, so a scrape pays
// for its own series only.
//
// The rest is deflated with Huffman codes trained on an earlier rest (TrainedDeflate): one
// scrape's series have the same names, labels and digits as the last one's, and building codes
// for each response was most of what deflate cost. The codes are trained on the first rest and
// again on every kRetrainEvery-th, so they follow the exposition when it changes (targets come and
// go); any rest can be encoded with any codes, only less tightly.
//
// A rest of up to kMemoLimit bytes is encoded line by line, and the lines whose text is the last
// rest's are copied as the last rest encoded them (LineMemo): a scrape deflates what moved. A
// larger rest (a large machine's counters, which all move) is encoded whole, with no memo to
// keep; so are the next kMemoPause rests after one of which fewer than a quarter of the lines
// could be copied, since keeping the memo costs more than it saves where most lines move.
class PrefixedGzip {
 public:
  explicit PrefixedGzip(std::string_view prefix);

  // Safe to call from several threads at once.
  std::string compress(std::string_view rest) const;

  static constexpr std::uint64_t kRetrainEvery = 1024;
  static constexpr std::size_t kMemoLimit = 64 * 1024;
  static constexpr std::uint64_t kMemoPause = 64;

 private:
  std::string head_;  // the gzip header and the prefix's deflate blocks
  unsigned long prefix_crc_ = 0;
  std::size_t prefix_size_ = 0;
  // Shared with the compressions under way when a newer one replaces it (std::atomic_load and
  // std::atomic_store on the pointer); held by pointer so that PrefixedGzip stays movable.
  mutable std::shared_ptr<const TrainedDeflate> codes_;
  // The last rest's lines, replaced by each compression that keeps one, as codes_ is; and the
  // one it replaced, once no compression reads it, whose buffers the next memo takes over.
  mutable std::shared_ptr<LineMemo> memo_;
  mutable std::shared_ptr<LineMemo> spare_;
  // No memo is kept before this compression (a paused memo).
  mutable std::unique_ptr<std::atomic<std::uint64_t>> memo_from_ =
      std::make_unique<std::atomic<std::uint64_t>>(0);
  mutable std::unique_ptr<std::atomic<std::uint64_t>> compressions_ =
      std::make_unique<std::atomic<std::uint64_t>>(0);
};

}  // namespace hwperf
