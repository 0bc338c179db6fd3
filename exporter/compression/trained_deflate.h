// A deflate encoder (RFC 1951) whose Huffman codes are built once, from a sample, and then reused
// for every input: a scrape's exposition has the same names, labels and digits as the one
// before, so the codes a general compressor would build again for each response (libdeflate
// spends most of a small response's instructions choosing and writing them) can be built once.
// Matches are found greedily, one candidate per hash, as fast compressors do at their lowest
// level (lz77.h). Pure functions and values: no sockets, no CivetWeb.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "exporter/compression/line_memo.h"

namespace hwperf {

class TrainedDeflate {
 public:
  // Builds the codes from what `sample` needs (its literals, match lengths and distances), every
  // other symbol kept possible at a low weight: any input can be encoded, the sample's kind best.
  explicit TrainedDeflate(std::string_view sample);

  // Appends `data` to `out` as one final dynamic-Huffman block, padded to a byte boundary: a
  // whole raw deflate stream, or the last part of one whose earlier part ended on a byte
  // boundary (a sync flush). Safe to call from several threads at once.
  void compress(std::string_view data, std::string& out) const;
  // The same, line by line, keeping in `next` what each line was encoded to: a line whose
  // tokens in `previous` (an earlier text's memo, or null) read text that `data` has too, at the
  // same place relative to the line, is copied from it. The output differs from compress()'s
  // only where it copies a line that compress() would have parsed otherwise, and inflates to
  // `data` all the same. Safe to call from several threads at once.
  void compress(std::string_view data, std::string& out, const LineMemo* previous,
                LineMemo& next) const;

  // Tells these codes apart from any others built in this process (LineMemo::codes).
  std::uint64_t id() const { return id_; }

  // The most bytes compress() appends for `size` bytes of input.
  std::size_t bound(std::size_t size) const;

  struct Code {
    std::uint16_t bits = 0;  // bit-reversed, as deflate writes Huffman codes LSB first
    std::uint8_t length = 0;
  };
  // A match length (3 to 258) as it is written: its symbol's code and the extra bits after it.
  struct LengthCode {
    std::uint32_t bits = 0;
    std::uint8_t length = 0;
  };
  // A distance symbol's code, how many extra bits follow it, and the first distance it stands
  // for (the extra bits carry the distance less that).
  struct DistanceCode {
    std::uint16_t bits = 0;
    std::uint8_t length = 0;
    std::uint8_t extra_bits = 0;
    std::uint16_t base = 0;
  };

 private:
  void write_header(const std::vector<std::uint8_t>& literal_length_lengths,
                    const std::vector<std::uint8_t>& distance_lengths);

  std::uint64_t id_;
  std::array<Code, 286> literal_length_{};
  std::array<LengthCode, 259> lengths_{};     // by match length
  std::array<DistanceCode, 30> distances_{};  // by distance symbol
  // The block header (BFINAL, BTYPE and the code lengths), written once: whole bytes, then the
  // bits left over.
  std::vector<std::uint8_t> header_bytes_;
  std::uint64_t header_tail_ = 0;
  int header_tail_bits_ = 0;
};

}  // namespace hwperf
