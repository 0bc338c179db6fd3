// Deflate with Huffman codes built once (exporter/trained_deflate.h). The format is RFC 1951:
// section 3.2.5 for the length and distance symbols, 3.2.2 for canonical codes, 3.2.7 for the
// dynamic block header; zlib's inflate is what the tests decode it with.
#include "exporter/compression/trained_deflate.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <queue>
#include <stdexcept>
#include <utility>

namespace hwperf {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "BitWriter stores its pending bits as a little-endian word");

constexpr int kEndOfBlock = 256;
constexpr std::size_t kMinMatch = 4;  // what one hashed word can confirm
constexpr std::size_t kMaxMatch = 258;
constexpr std::size_t kWindow = 32768;
constexpr int kHashBits = 13;
constexpr int kMaxCodeLength = 15;
constexpr int kMaxPrecodeLength = 7;
// A symbol the sample never used keeps weight 1 against this for each time a symbol was used, so
// that it stays encodable at a long code without lengthening the sample's own codes much.
constexpr std::uint64_t kSampleWeight = 16;

struct Symbol {
  int symbol;
  int extra_bits;
  unsigned extra;
};

int floor_log2(std::size_t value) {
  return static_cast<int>(sizeof(unsigned long long) * 8 - 1) -
         __builtin_clzll(static_cast<unsigned long long>(value));
}

// RFC 1951 3.2.5: lengths 3 to 258 as symbols 257 to 285, each with its extra bits.
Symbol compute_length_symbol(std::size_t length) {
  if (length == kMaxMatch) return {285, 0, 0};
  const std::size_t above = length - 3;
  if (above < 8) return {257 + static_cast<int>(above), 0, 0};
  const int magnitude = floor_log2(above);
  const int extra_bits = magnitude - 2;
  return {257 + 4 * (magnitude - 1) + static_cast<int>((above >> extra_bits) & 3), extra_bits,
          static_cast<unsigned>(above & ((std::size_t{1} << extra_bits) - 1))};
}

// Distances 1 to 32768 as symbols 0 to 29.
Symbol compute_distance_symbol(std::size_t distance) {
  const std::size_t above = distance - 1;
  if (above < 4) return {static_cast<int>(above), 0, 0};
  const int magnitude = floor_log2(above);
  const int extra_bits = magnitude - 1;
  return {2 * magnitude + static_cast<int>((above >> extra_bits) & 1), extra_bits,
          static_cast<unsigned>(above & ((std::size_t{1} << extra_bits) - 1))};
}

// Looked up rather than computed per match: a table for every length, and for distances one
// entry per distance up to 256 and then one per 128 (a symbol above 256 spans a multiple of 128
// whose extra bits carry the rest), as zlib's trees.c does.
struct SymbolTables {
  std::array<Symbol, kMaxMatch + 1> length{};
  std::array<std::uint8_t, 512> distance_code{};
  SymbolTables() {
    for (std::size_t length_value = 3; length_value <= kMaxMatch; ++length_value) {
      length[length_value] = compute_length_symbol(length_value);
    }
    for (std::size_t distance = 1; distance <= 256; ++distance) {
      distance_code[distance - 1] =
          static_cast<std::uint8_t>(compute_distance_symbol(distance).symbol);
    }
    for (std::size_t distance = 257; distance <= kWindow; distance += 128) {
      distance_code[256 + ((distance - 1) >> 7)] =
          static_cast<std::uint8_t>(compute_distance_symbol(distance).symbol);
    }
  }
};

const SymbolTables& symbol_tables() {
  static const SymbolTables tables;
  return tables;
}

// The first distance of each distance symbol, and its extra bits (RFC 1951 3.2.5).
constexpr std::array<std::uint16_t, 30> kDistanceBase = {
    1,   2,   3,   4,   5,   7,    9,    13,   17,   25,   33,   49,   65,    97,    129,
    193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};

Symbol length_symbol(const SymbolTables& tables, std::size_t length) {
  return tables.length[length];
}

Symbol distance_symbol(const SymbolTables& tables, std::size_t distance) {
  const std::size_t above = distance - 1;
  const int symbol = tables.distance_code[above < 256 ? above : 256 + (above >> 7)];
  const int extra_bits = symbol < 4 ? 0 : symbol / 2 - 1;
  return {symbol, extra_bits,
          static_cast<unsigned>(distance - kDistanceBase[static_cast<std::size_t>(symbol)])};
}

// Where each hashed 4-byte word was last seen. Never cleared between inputs: an entry from an
// earlier input holds a value below the current `base` and counts as empty, so the output
// depends on the input alone, and no input pays for clearing 32 KiB.
struct MatchTable {
  std::array<std::uint32_t, std::size_t{1} << kHashBits> slots{};
  std::uint32_t base = 1;
};

// Tables kept for reuse, up to four (as many gzip scrapes as ever run at once), rather than one
// per thread: CivetWeb runs up to 128 workers, and 32 KiB each would be 4 MiB resident.
class MatchTablePool {
 public:
  static std::unique_ptr<MatchTable> take() {
    {
      std::lock_guard<std::mutex> lock(instance().mutex_);
      auto& free = instance().free_;
      if (!free.empty()) {
        auto table = std::move(free.back());
        free.pop_back();
        return table;
      }
    }
    return std::make_unique<MatchTable>();
  }

  static void give(std::unique_ptr<MatchTable> table) {
    std::lock_guard<std::mutex> lock(instance().mutex_);
    if (instance().free_.size() < kMaxPooled) instance().free_.push_back(std::move(table));
  }

 private:
  static constexpr std::size_t kMaxPooled = 4;

  // Never destroyed, so that a compression at exit never finds it gone.
  static MatchTablePool& instance() {
    static MatchTablePool* const pool = new MatchTablePool;
    return *pool;
  }

  std::mutex mutex_;
  std::vector<std::unique_ptr<MatchTable>> free_;
};

std::uint32_t load32(const unsigned char* at) {
  std::uint32_t word;
  std::memcpy(&word, at, sizeof word);
  return word;
}

std::size_t common_length(const unsigned char* a, const unsigned char* b, std::size_t limit) {
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

// Greedy LZ77: at each position the latest earlier position with the same 4-byte hash, taken
// when its bytes match. `sink` receives literal(byte) and match(length, distance) in order.
template <typename Sink>
void find_matches(std::string_view data, Sink& sink) {
  auto taken = MatchTablePool::take();
  MatchTable& table = *taken;
  const std::size_t size = data.size();
  if (size >= std::numeric_limits<std::uint32_t>::max() / 2) {
    throw std::length_error("deflate: input too large");
  }
  if (size > std::numeric_limits<std::uint32_t>::max() - table.base) {
    table.slots.fill(0);
    table.base = 1;
  }
  const std::uint32_t base = table.base;
  const auto* bytes = reinterpret_cast<const unsigned char*>(data.data());
  std::size_t at = 0;
  while (at + kMinMatch <= size) {
    const std::uint32_t word = load32(bytes + at);
    std::uint32_t& slot = table.slots[(word * 0x9E3779B1u) >> (32 - kHashBits)];
    const std::uint32_t seen = slot;
    slot = base + static_cast<std::uint32_t>(at);
    if (seen >= base) {
      const std::size_t earlier = seen - base;
      const std::size_t distance = at - earlier;
      if (distance <= kWindow && load32(bytes + earlier) == word) {
        const std::size_t length =
            kMinMatch + common_length(bytes + earlier + kMinMatch, bytes + at + kMinMatch,
                                      std::min(kMaxMatch, size - at) - kMinMatch);
        sink.match(length, distance);
        // The match's last word too, so that the text after a repeated piece can be found again.
        const std::size_t last = at + length - kMinMatch;
        if (last > at && last + kMinMatch <= size) {
          table.slots[(load32(bytes + last) * 0x9E3779B1u) >> (32 - kHashBits)] =
              base + static_cast<std::uint32_t>(last);
        }
        at += length;
        continue;
      }
    }
    sink.literal(bytes[at]);
    ++at;
  }
  for (; at < size; ++at) sink.literal(bytes[at]);
  table.base = base + static_cast<std::uint32_t>(size);
  MatchTablePool::give(std::move(taken));
}

struct SymbolCounts {
  const SymbolTables& tables = symbol_tables();
  std::array<std::uint64_t, 286> literal_length{};
  std::array<std::uint64_t, 30> distance{};
  void literal(unsigned char byte) { ++literal_length[byte]; }
  void match(std::size_t length, std::size_t distance_back) {
    ++literal_length[static_cast<std::size_t>(length_symbol(tables, length).symbol)];
    ++distance[static_cast<std::size_t>(distance_symbol(tables, distance_back).symbol)];
  }
};

// Huffman code lengths for `weights` (0: symbol unused), none longer than `limit`: when the
// optimal code is too deep, the weights are halved (every used one staying at least 1) and the
// code built again, until it fits; equal weights give a balanced code, so this ends.
std::vector<std::uint8_t> code_lengths(std::vector<std::uint64_t> weights, int limit) {
  std::vector<std::uint8_t> lengths(weights.size(), 0);
  for (;;) {
    using Node = std::pair<std::uint64_t, std::size_t>;  // weight, node index
    std::priority_queue<Node, std::vector<Node>, std::greater<>> queue;
    std::vector<std::size_t> parent(weights.size(), 0);
    for (std::size_t symbol = 0; symbol < weights.size(); ++symbol) {
      if (weights[symbol] > 0) queue.emplace(weights[symbol], symbol);
    }
    if (queue.size() < 2) throw std::logic_error("deflate: a code needs two used symbols");
    while (queue.size() > 1) {
      const Node first = queue.top();
      queue.pop();
      const Node second = queue.top();
      queue.pop();
      const std::size_t inner = parent.size();
      parent.push_back(0);
      parent[first.second] = inner;
      parent[second.second] = inner;
      queue.emplace(first.first + second.first, inner);
    }
    const std::size_t root = queue.top().second;
    int deepest = 0;
    for (std::size_t symbol = 0; symbol < weights.size(); ++symbol) {
      if (weights[symbol] == 0) continue;
      int depth = 0;
      for (std::size_t node = symbol; node != root; node = parent[node]) ++depth;
      lengths[symbol] = static_cast<std::uint8_t>(std::min(depth, 255));
      deepest = std::max(deepest, depth);
    }
    if (deepest <= limit) return lengths;
    for (auto& weight : weights) {
      if (weight > 0) weight = (weight + 1) / 2;
    }
  }
}

// RFC 1951 3.2.2: canonical codes from their lengths, bit-reversed for LSB-first writing.
template <std::size_t N>
std::array<TrainedDeflate::Code, N> canonical_codes(const std::vector<std::uint8_t>& lengths) {
  std::array<int, kMaxCodeLength + 1> count{};
  for (const auto length : lengths) ++count[length];
  count[0] = 0;
  std::array<unsigned, kMaxCodeLength + 2> next{};
  unsigned code = 0;
  for (int bits = 1; bits <= kMaxCodeLength; ++bits) {
    code = (code + static_cast<unsigned>(count[bits - 1])) << 1;
    next[bits] = code;
  }
  std::array<TrainedDeflate::Code, N> codes{};
  for (std::size_t symbol = 0; symbol < N; ++symbol) {
    const int length = lengths[symbol];
    if (length == 0) continue;
    const unsigned value = next[length]++;
    unsigned reversed = 0;
    for (int bit = 0; bit < length; ++bit) reversed |= ((value >> bit) & 1u) << (length - 1 - bit);
    codes[symbol] = {static_cast<std::uint16_t>(reversed), static_cast<std::uint8_t>(length)};
  }
  return codes;
}

// Writes bits LSB first into a buffer the caller sized, with 8 bytes of room past the last bit:
// at most 32 bits a call, stored 8 bytes at a time (on a little-endian machine, the order the bits
// go out in) as soon as 32 are pending.
class BitWriter {
 public:
  explicit BitWriter(unsigned char* out) : out_(out) {}
  BitWriter(unsigned char* out, std::uint64_t pending, int pending_bits)
      : out_(out), pending_(pending), pending_bits_(pending_bits) {}

  void put(std::uint32_t bits, int count) {
    pending_ |= static_cast<std::uint64_t>(bits) << pending_bits_;
    pending_bits_ += count;
    if (pending_bits_ >= 32) {
      std::memcpy(out_, &pending_, sizeof pending_);
      out_ += 4;
      pending_ >>= 32;
      pending_bits_ -= 32;
    }
  }
  void put(TrainedDeflate::Code code) { put(code.bits, code.length); }

  // Writes what is pending, the last byte padded with zero bits; returns the end.
  unsigned char* finish() {
    for (; pending_bits_ > 0; pending_bits_ -= 8, pending_ >>= 8) {
      *out_++ = static_cast<unsigned char>(pending_);
    }
    pending_bits_ = 0;
    return out_;
  }
  // Whole bytes written so far; the bits after them are left in `pending`.
  unsigned char* whole_bytes(std::uint64_t& pending, int& pending_bits) {
    while (pending_bits_ >= 8) {
      *out_++ = static_cast<unsigned char>(pending_);
      pending_ >>= 8;
      pending_bits_ -= 8;
    }
    pending = pending_;
    pending_bits = pending_bits_;
    return out_;
  }

 private:
  unsigned char* out_;
  std::uint64_t pending_ = 0;
  int pending_bits_ = 0;
};

template <std::size_t LiteralLengths, std::size_t Distances>
struct EncodingSink {
  BitWriter& writer;
  const std::array<TrainedDeflate::Code, LiteralLengths>& literal_length;
  const std::array<TrainedDeflate::Code, Distances>& distance;
  const SymbolTables& tables = symbol_tables();

  void literal(unsigned char byte) { writer.put(literal_length[byte]); }
  void match(std::size_t length, std::size_t distance_back) {
    const Symbol length_code = length_symbol(tables, length);
    writer.put(literal_length[static_cast<std::size_t>(length_code.symbol)]);
    if (length_code.extra_bits > 0) writer.put(length_code.extra, length_code.extra_bits);
    const Symbol distance_code = distance_symbol(tables, distance_back);
    writer.put(distance[static_cast<std::size_t>(distance_code.symbol)]);
    if (distance_code.extra_bits > 0) writer.put(distance_code.extra, distance_code.extra_bits);
  }
};

// The order the code length code's lengths are sent in (RFC 1951 3.2.7).
constexpr std::array<int, 19> kPrecodeOrder = {16, 17, 18, 0, 8,  7, 9,  6, 10, 5,
                                               11, 4,  12, 3, 13, 2, 14, 1, 15};

}  // namespace

TrainedDeflate::TrainedDeflate(std::string_view sample) {
  SymbolCounts counts;
  find_matches(sample, counts);
  ++counts.literal_length[kEndOfBlock];
  std::vector<std::uint64_t> weights;
  for (const auto used : counts.literal_length) weights.push_back(used * kSampleWeight + 1);
  const auto literal_length_lengths = code_lengths(weights, kMaxCodeLength);
  weights.clear();
  for (const auto used : counts.distance) weights.push_back(used * kSampleWeight + 1);
  const auto distance_lengths = code_lengths(weights, kMaxCodeLength);
  literal_length_ = canonical_codes<286>(literal_length_lengths);
  distance_ = canonical_codes<30>(distance_lengths);

  // Every length is 1 to 15, none 0, so the run-length code needs only symbol 16 (repeat the
  // previous length 3 to 6 times); runs may cross from one code's lengths into the other's.
  std::vector<std::uint8_t> all(literal_length_lengths);
  all.insert(all.end(), distance_lengths.begin(), distance_lengths.end());
  std::vector<std::pair<int, int>> runs;  // precode symbol, repeat count (for 16)
  for (std::size_t at = 0; at < all.size();) {
    runs.emplace_back(all[at], 0);
    std::size_t same = at + 1;
    while (same < all.size() && all[same] == all[at]) ++same;
    std::size_t repeats = same - at - 1;
    while (repeats >= 3) {
      const std::size_t take = std::min<std::size_t>(repeats, 6);
      runs.emplace_back(16, static_cast<int>(take));
      repeats -= take;
    }
    for (; repeats > 0; --repeats) runs.emplace_back(all[at], 0);
    at = same;
  }
  std::vector<std::uint64_t> precode_weights(19, 0);
  for (const auto& [symbol, repeat] : runs) ++precode_weights[static_cast<std::size_t>(symbol)];
  // A code needs two symbols; a run of one length alone would leave one.
  if (std::count_if(precode_weights.begin(), precode_weights.end(),
                    [](std::uint64_t weight) { return weight > 0; }) < 2) {
    ++precode_weights[precode_weights[0] > 0 ? 1 : 0];
  }
  const auto precode_lengths = code_lengths(precode_weights, kMaxPrecodeLength);
  const auto precode = canonical_codes<19>(precode_lengths);
  std::size_t sent = kPrecodeOrder.size();
  while (sent > 4 && precode_lengths[static_cast<std::size_t>(kPrecodeOrder[sent - 1])] == 0) {
    --sent;
  }

  std::vector<unsigned char> header(512 + runs.size() * 2);
  BitWriter writer(header.data());
  writer.put(1, 1);  // BFINAL: the last block
  writer.put(2, 2);  // BTYPE: dynamic Huffman codes
  writer.put(286 - 257, 5);
  writer.put(30 - 1, 5);
  writer.put(static_cast<std::uint32_t>(sent - 4), 4);
  for (std::size_t i = 0; i < sent; ++i) {
    writer.put(precode_lengths[static_cast<std::size_t>(kPrecodeOrder[i])], 3);
  }
  for (const auto& [symbol, repeat] : runs) {
    writer.put(precode[static_cast<std::size_t>(symbol)]);
    if (symbol == 16) writer.put(static_cast<std::uint32_t>(repeat - 3), 2);
  }
  unsigned char* end = writer.whole_bytes(header_tail_, header_tail_bits_);
  header_bytes_.assign(header.data(), end);
}

std::size_t TrainedDeflate::bound(std::size_t size) const {
  // Every byte a literal of at most 15 bits (a match of 4 or more bytes takes at most 48), the
  // end-of-block code, and the room BitWriter's 4-byte stores may run past the last bit.
  return header_bytes_.size() + (size * kMaxCodeLength + 2 * kMaxCodeLength + 7) / 8 + 8;
}

void TrainedDeflate::compress(std::string_view data, std::string& out) const {
  // Written into memory left uninitialised and then appended: growing `out` by the bound would
  // first fill twice the input with zeros, which cost as much as the encoding.
  const std::unique_ptr<unsigned char[]> scratch(new unsigned char[bound(data.size())]);
  unsigned char* start = scratch.get();
  std::memcpy(start, header_bytes_.data(), header_bytes_.size());
  BitWriter writer(start + header_bytes_.size(), header_tail_, header_tail_bits_);
  EncodingSink<286, 30> sink{writer, literal_length_, distance_};
  find_matches(data, sink);
  writer.put(literal_length_[kEndOfBlock]);
  const unsigned char* end = writer.finish();
  out.append(reinterpret_cast<const char*>(start), static_cast<std::size_t>(end - start));
}

}  // namespace hwperf
