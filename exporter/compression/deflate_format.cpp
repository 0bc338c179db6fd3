#include "exporter/compression/deflate_format.h"

namespace hwperf::deflate_format {
namespace {

int floor_log2(std::size_t value) {
  return static_cast<int>(sizeof(unsigned long long) * 8 - 1) -
         __builtin_clzll(static_cast<unsigned long long>(value));
}

// RFC 1951 3.2.5: lengths 3 to 258 as symbols 257 to 285, each with its extra bits.
Symbol compute_length_symbol(std::size_t length) {
  if (length == lz77::kMaxMatch) return {285, 0, 0};
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

}  // namespace

SymbolTables::SymbolTables() {
  for (std::size_t length_value = 3; length_value <= lz77::kMaxMatch; ++length_value) {
    length[length_value] = compute_length_symbol(length_value);
  }
  for (std::size_t distance = 1; distance <= 256; ++distance) {
    distance_code[distance - 1] =
        static_cast<std::uint8_t>(compute_distance_symbol(distance).symbol);
  }
  for (std::size_t distance = 257; distance <= lz77::kWindow; distance += 128) {
    distance_code[256 + ((distance - 1) >> 7)] =
        static_cast<std::uint8_t>(compute_distance_symbol(distance).symbol);
  }
}

const SymbolTables& symbol_tables() {
  static const SymbolTables tables;
  return tables;
}

}  // namespace hwperf::deflate_format
