// RFC 1951's symbols and bits as trained_deflate writes them: the length and distance symbols
// (section 3.2.5), a bit writer, and the sink that writes lz77's matches with a TrainedDeflate's
// codes. Internal to compression/.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "exporter/compression/lz77.h"
#include "exporter/compression/trained_deflate.h"

namespace hwperf::deflate_format {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "BitWriter stores its pending bits as a little-endian word");

inline constexpr int kEndOfBlock = 256;
inline constexpr int kMaxCodeLength = 15;

struct Symbol {
  int symbol;
  int extra_bits;
  unsigned extra;
};

// Looked up rather than computed per match: a table for every length, and for distances one
// entry per distance up to 256 and then one per 128 (a symbol above 256 spans a multiple of 128
// whose extra bits carry the rest), as zlib's trees.c does.
struct SymbolTables {
  SymbolTables();
  std::array<Symbol, lz77::kMaxMatch + 1> length{};
  std::array<std::uint8_t, 512> distance_code{};
};
const SymbolTables& symbol_tables();

// The first distance of each distance symbol (RFC 1951 3.2.5).
inline constexpr std::array<std::uint16_t, 30> kDistanceBase = {
    1,   2,   3,   4,   5,   7,    9,    13,   17,   25,   33,   49,   65,    97,    129,
    193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};

inline std::size_t distance_symbol(const SymbolTables& tables, std::size_t distance) {
  const std::size_t above = distance - 1;
  return tables.distance_code[above < 256 ? above : 256 + (above >> 7)];
}

// Writes bits LSB first into a buffer the caller sized, with 8 bytes of room past the last bit:
// up to 32 bits a call are added to a 64-bit word, which is stored 8 bytes at a time (on a
// little-endian machine, the order the bits go out in) as soon as 32 bits are pending.
class BitWriter {
 public:
  BitWriter(unsigned char* out, std::uint64_t pending, int pending_bits)
      : out_(out), pending_(pending), pending_bits_(pending_bits) {}

  void put(std::uint64_t bits, int count) {
    pending_ |= bits << pending_bits_;
    pending_bits_ += count;
    if (pending_bits_ >= 32) {
      std::memcpy(out_, &pending_, sizeof pending_);
      out_ += 4;
      pending_ >>= 32;
      pending_bits_ -= 32;
    }
  }
  void put(TrainedDeflate::Code code) { put(code.bits, code.length); }

  // Copies bits [begin, end) of `from` (written LSB first, readable 8 bytes past `end`): whole
  // bytes at once when the writer stands at the same place in a byte as `begin`, as it does when
  // everything before was copied too.
  void copy(const unsigned char* from, std::size_t begin, std::size_t end) {
    if (static_cast<std::size_t>(pending_bits_ % 8) == begin % 8 && end - begin >= 64) {
      const int head = static_cast<int>((8 - begin % 8) % 8);
      if (head > 0) put(bits_at(from, begin, head), head);
      begin += static_cast<std::size_t>(head);
      std::memcpy(out_, &pending_, sizeof pending_);  // whole bytes now: pending_bits_ % 8 == 0
      out_ += pending_bits_ / 8;
      pending_ = 0;
      pending_bits_ = 0;
      const std::size_t bytes = (end - begin) / 8;
      std::memcpy(out_, from + begin / 8, bytes);
      out_ += bytes;
      begin += bytes * 8;
    }
    for (; begin + 32 <= end; begin += 32) put(bits_at(from, begin, 32), 32);
    if (begin < end) {
      const int count = static_cast<int>(end - begin);
      put(bits_at(from, begin, count), count);
    }
  }

  // Bits written since `start`.
  std::size_t position(const unsigned char* start) const {
    return static_cast<std::size_t>(out_ - start) * 8 + static_cast<std::size_t>(pending_bits_);
  }

  // Writes what is pending, the last byte padded with zero bits; returns the end.
  unsigned char* finish() {
    std::memcpy(out_, &pending_, sizeof pending_);
    return out_ + (pending_bits_ + 7) / 8;
  }
  // Whole bytes written so far; the bits after them are left in `pending`.
  unsigned char* whole_bytes(std::uint64_t& pending, int& pending_bits) {
    std::memcpy(out_, &pending_, sizeof pending_);
    pending = pending_ >> (pending_bits_ & ~7);
    pending_bits = pending_bits_ & 7;
    return out_ + pending_bits_ / 8;
  }

 private:
  static std::uint64_t bits_at(const unsigned char* from, std::size_t begin, int count) {
    std::uint64_t word;
    std::memcpy(&word, from + begin / 8, sizeof word);
    return (word >> (begin % 8)) & ((std::uint64_t{1} << count) - 1);
  }

  unsigned char* out_;
  std::uint64_t pending_ = 0;
  int pending_bits_ = 0;
};

// Writes what lz77 finds with trained codes: a match as two codes, its length with the extra
// bits and its distance with theirs. Holds its writer by value, so that lz77's loop can keep the
// bits in registers.
struct EncodingSink {
  BitWriter writer;
  const std::array<TrainedDeflate::Code, 286>& literal_length;
  const std::array<TrainedDeflate::LengthCode, lz77::kMaxMatch + 1>& lengths;
  const std::array<TrainedDeflate::DistanceCode, 30>& distances;
  const SymbolTables& tables = symbol_tables();

  void literal(unsigned char byte) { writer.put(literal_length[byte]); }
  void match(std::size_t length, std::size_t distance) {
    const TrainedDeflate::LengthCode& length_code = lengths[length];
    writer.put(length_code.bits, length_code.length);
    const TrainedDeflate::DistanceCode& code = distances[distance_symbol(tables, distance)];
    writer.put(code.bits | static_cast<std::uint64_t>(distance - code.base) << code.length,
               code.length + code.extra_bits);
  }
};

}  // namespace hwperf::deflate_format
