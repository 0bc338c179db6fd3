// The match finder of trained_deflate (exporter/compression/trained_deflate.h): greedy LZ77 over
// deflate's 32 KiB window, one candidate per hash of 4 bytes, as fast compressors do at their
// lowest level. Internal to compression/.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>

namespace hwperf::lz77 {

inline constexpr std::size_t kMinMatch = 4;  // what one hashed word can confirm
inline constexpr std::size_t kMaxMatch = 258;
inline constexpr std::size_t kWindow = 32768;
inline constexpr int kHashBits = 13;

// Where each hashed 4-byte word was last seen. Never cleared between inputs: an entry from an
// earlier input holds a value below the current `base` and counts as empty, so the output
// depends on the input alone, and no input pays for clearing 32 KiB.
struct MatchTable {
  std::array<std::uint32_t, std::size_t{1} << kHashBits> slots{};
  std::uint32_t base = 1;
};

inline std::uint32_t load32(const unsigned char* at) {
  std::uint32_t word;
  std::memcpy(&word, at, sizeof word);
  return word;
}

inline std::uint32_t hash_of(std::uint32_t word) {
  return (word * 0x9E3779B1u) >> (32 - kHashBits);
}

// How many bytes `a` and `b` have in common, at most `limit`, compared 8 at a time.
inline std::size_t common_length(const unsigned char* a, const unsigned char* b,
                                 std::size_t limit) {
  std::size_t length = 0;
  while (length + 8 <= limit) {
    std::uint64_t x;
    std::uint64_t y;
    std::memcpy(&x, a + length, 8);
    std::memcpy(&y, b + length, 8);
    if (x != y) return length + static_cast<std::size_t>(__builtin_ctzll(x ^ y) / 8);
    length += 8;
  }
  while (length < limit && a[length] == b[length]) ++length;
  return length;
}

// What parse() tells a recorder: each position it makes a candidate (at its hash slot), and the
// earliest position each match copies from. This one keeps nothing.
struct NoRecord {
  void inserted(std::uint32_t /*slot*/, std::size_t /*at*/) {}
  void copied_from(std::size_t /*at*/) {}
};

// Greedy LZ77 over one input, parsed in order from its start, in as many calls as its user
// wants: at each position the latest earlier position with the same 4-byte hash is taken when
// its bytes match, and the match's last word is remembered too, so that the text after a
// repeated piece can be found again. Its table comes from a pool of four (as many gzip scrapes as
// ever run at once), rather than one per thread: CivetWeb runs up to 128 workers, and 32 KiB
// each would be 4 MiB resident.
class Matcher {
 public:
  // Throws std::length_error for an input of 2 GiB or more.
  explicit Matcher(std::string_view data);
  ~Matcher();
  Matcher(const Matcher&) = delete;
  Matcher& operator=(const Matcher&) = delete;

  // Gives `sink` literal(byte) and match(length, distance) for the tokens that begin at `at` and
  // before `stop` (a match may run on past it), and returns it with where the last one ended.
  // The sink is held by value so that its state can stay in registers through the loop.
  template <typename Sink, typename Record = NoRecord>
  Sink parse(std::size_t& at, std::size_t stop, Sink sink, Record&& record = {});

  // Makes `at` the candidate of `slot` again, as parse() did when it passed there.
  void replay(std::uint32_t slot, std::size_t at) {
    table_->slots[slot] = base_ + static_cast<std::uint32_t>(at);
  }

 private:
  std::unique_ptr<MatchTable> table_;
  const unsigned char* bytes_;
  std::size_t size_;
  std::uint32_t base_;
};

template <typename Sink, typename Record>
Sink Matcher::parse(std::size_t& at_in_out, std::size_t stop, Sink sink, Record&& record) {
  std::uint32_t* const slots = table_->slots.data();
  const std::uint32_t base = base_;
  const unsigned char* const bytes = bytes_;
  const std::size_t size = size_;
  std::size_t at = at_in_out;
  while (at < stop && at + kMinMatch <= size) {
    const std::uint32_t word = load32(bytes + at);
    const std::uint32_t slot = hash_of(word);
    const std::uint32_t seen = slots[slot];
    slots[slot] = base + static_cast<std::uint32_t>(at);
    record.inserted(slot, at);
    const std::size_t earlier = seen - base;  // meaningless unless seen >= base
    if (seen >= base && at - earlier <= kWindow && load32(bytes + earlier) == word) {
      const std::size_t length =
          kMinMatch + common_length(bytes + earlier + kMinMatch, bytes + at + kMinMatch,
                                    std::min(kMaxMatch, size - at) - kMinMatch);
      sink.match(length, at - earlier);
      record.copied_from(earlier);
      const std::size_t last = at + length - kMinMatch;
      if (last > at) {
        const std::uint32_t last_slot = hash_of(load32(bytes + last));
        slots[last_slot] = base + static_cast<std::uint32_t>(last);
        record.inserted(last_slot, last);
      }
      at += length;
      continue;
    }
    sink.literal(bytes[at]);
    ++at;
  }
  for (; at < stop && at < size; ++at) sink.literal(bytes[at]);
  at_in_out = at;
  return sink;
}

}  // namespace hwperf::lz77
