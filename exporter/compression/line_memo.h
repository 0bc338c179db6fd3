// What one text's encoding leaves for the next (TrainedDeflate::compress with a memo): a scrape's
// exposition is line for line the last one's but for the values that moved, so a line whose
// tokens read only lines that are as they were last time is copied as the bits it was encoded
// to, rather than parsed and encoded again. A deflate scrape then pays for the lines that changed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hwperf {

struct LineMemo {
  // The tokens (literals and matches) that begin in one line of `text`. Trivial, so that a
  // vector of them is made without a constructor call per line.
  struct Line {
    std::uint32_t start;         // the line's first byte
    std::uint32_t tokens_begin;  // where its first token begins (the last line's may run on)
    std::uint32_t tokens_end;    // where its last token ends
    // The lines holding the first and the last byte they read (a match's source, or their own).
    std::uint32_t reads_from_line;
    std::uint32_t reads_to_line;
    std::uint32_t inserts_begin;  // in `inserts`: the positions they made candidates, from `start`
    std::uint32_t inserts_end;
    std::uint64_t bits_begin;  // in `bits`
    std::uint64_t bits_end;
  };

  std::uint64_t codes = 0;  // the TrainedDeflate that encoded it (its id())
  std::string text;
  std::vector<Line> lines;
  // Positions made candidates, in order, each from the start of its line; sized for the most a
  // text can make (two a byte), so only the first are meaningful.
  std::vector<std::uint32_t> inserts;
  // The block as encoded, in its first `bytes` bytes (the rest is room: a memo's buffers are
  // used again for a later text, so that a scrape allocates none).
  std::string bits;
  std::size_t bytes = 0;
  std::size_t lines_copied = 0;  // of `lines`, how many were copied from the memo before
};

}  // namespace hwperf
