// Deflate with Huffman codes built once (exporter/compression/trained_deflate.h), over the
// matches lz77.h finds. The format is RFC 1951:
// section 3.2.5 for the length and distance symbols, 3.2.2 for canonical codes, 3.2.7 for the
// dynamic block header; zlib's inflate is what the tests decode it with.
#include "exporter/compression/trained_deflate.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <queue>
#include <stdexcept>
#include <utility>

#include "exporter/compression/deflate_format.h"
#include "exporter/compression/lz77.h"

namespace hwperf {
namespace {

using deflate_format::BitWriter;
using deflate_format::kEndOfBlock;
using deflate_format::kMaxCodeLength;
using lz77::kMaxMatch;

constexpr int kMaxPrecodeLength = 7;
std::atomic<std::uint64_t> trained_codes{0};  // the last id given
// A symbol the sample never used keeps weight 1 against this for each time a symbol was used, so
// that it stays encodable at a long code without lengthening the sample's own codes much.
constexpr std::uint64_t kSampleWeight = 16;

struct SymbolCounts {
  const deflate_format::SymbolTables& tables = deflate_format::symbol_tables();
  std::array<std::uint64_t, 286> literal_length{};
  std::array<std::uint64_t, 30> distance{};
  void literal(unsigned char byte) { ++literal_length[byte]; }
  void match(std::size_t length, std::size_t distance_back) {
    ++literal_length[static_cast<std::size_t>(tables.length[length].symbol)];
    ++distance[deflate_format::distance_symbol(tables, distance_back)];
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

// The order the code length code's lengths are sent in (RFC 1951 3.2.7).
constexpr std::array<int, 19> kPrecodeOrder = {16, 17, 18, 0, 8,  7, 9,  6, 10, 5,
                                               11, 4,  12, 3, 13, 2, 14, 1, 15};

}  // namespace

TrainedDeflate::TrainedDeflate(std::string_view sample) : id_(++trained_codes) {
  std::size_t at = 0;
  SymbolCounts counts = lz77::Matcher(sample).parse(at, sample.size(), SymbolCounts{});
  ++counts.literal_length[kEndOfBlock];
  std::vector<std::uint64_t> weights;
  for (const auto used : counts.literal_length) weights.push_back(used * kSampleWeight + 1);
  const auto literal_length_lengths = code_lengths(weights, kMaxCodeLength);
  weights.clear();
  for (const auto used : counts.distance) weights.push_back(used * kSampleWeight + 1);
  const auto distance_lengths = code_lengths(weights, kMaxCodeLength);
  literal_length_ = canonical_codes<286>(literal_length_lengths);
  const auto distance = canonical_codes<30>(distance_lengths);
  const deflate_format::SymbolTables& tables = deflate_format::symbol_tables();
  for (std::size_t length = 3; length <= kMaxMatch; ++length) {
    const deflate_format::Symbol symbol = tables.length[length];
    const Code code = literal_length_[static_cast<std::size_t>(symbol.symbol)];
    lengths_[length] = {code.bits | symbol.extra << code.length,
                        static_cast<std::uint8_t>(code.length + symbol.extra_bits)};
  }
  for (std::size_t symbol = 0; symbol < distances_.size(); ++symbol) {
    distances_[symbol] = {distance[symbol].bits, distance[symbol].length,
                          static_cast<std::uint8_t>(symbol < 4 ? 0 : symbol / 2 - 1),
                          deflate_format::kDistanceBase[symbol]};
  }
  write_header(literal_length_lengths, distance_lengths);
}

// The block header: BFINAL, BTYPE, then both codes' lengths, run-length coded with a code of
// their own (RFC 1951 3.2.7), written once.
void TrainedDeflate::write_header(const std::vector<std::uint8_t>& literal_length_lengths,
                                  const std::vector<std::uint8_t>& distance_lengths) {
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
  BitWriter writer(header.data(), 0, 0);
  writer.put(1, 1);  // BFINAL: the last block
  writer.put(2, 2);  // BTYPE: dynamic Huffman codes
  writer.put(286 - 257, 5);
  writer.put(30 - 1, 5);
  writer.put(sent - 4, 4);
  for (std::size_t i = 0; i < sent; ++i) {
    writer.put(precode_lengths[static_cast<std::size_t>(kPrecodeOrder[i])], 3);
  }
  for (const auto& [symbol, repeat] : runs) {
    writer.put(precode[static_cast<std::size_t>(symbol)]);
    if (symbol == 16) writer.put(static_cast<std::uint64_t>(repeat - 3), 2);
  }
  unsigned char* end = writer.whole_bytes(header_tail_, header_tail_bits_);
  header_bytes_.assign(header.data(), end);
}

std::size_t TrainedDeflate::bound(std::size_t size) const {
  // Every byte a literal of at most 15 bits (a match of 4 or more bytes takes at most 48), the
  // end-of-block code, and the room BitWriter's 8-byte stores may run past the last bit.
  return header_bytes_.size() + (size * kMaxCodeLength + 2 * kMaxCodeLength + 7) / 8 + 8;
}

void TrainedDeflate::compress(std::string_view data, std::string& out) const {
  // Written into memory left uninitialised and then appended: growing `out` by the bound would
  // first fill twice the input with zeros, which cost as much as the encoding.
  const std::unique_ptr<unsigned char[]> scratch(new unsigned char[bound(data.size())]);
  unsigned char* start = scratch.get();
  std::memcpy(start, header_bytes_.data(), header_bytes_.size());
  const BitWriter start_writer(start + header_bytes_.size(), header_tail_, header_tail_bits_);
  std::size_t at = 0;
  BitWriter writer =
      lz77::Matcher(data)
          .parse(at, data.size(),
                 deflate_format::EncodingSink{start_writer, literal_length_, lengths_, distances_})
          .writer;
  writer.put(literal_length_[kEndOfBlock]);
  const unsigned char* end = writer.finish();
  out.append(reinterpret_cast<const char*>(start), static_cast<std::size_t>(end - start));
}

}  // namespace hwperf
