// One spelling per enum value, in one table per enum, used for reading (config, flags), dumping
// (--check-config) and printing (logs) alike: renaming a value is one edit.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace hwperf {

template <typename Enum>
struct EnumName {
  Enum value;
  const char* name;
};

template <typename Enum, std::size_t N>
constexpr const char* name_of(const EnumName<Enum> (&table)[N], Enum value) {
  for (const auto& entry : table) {
    if (entry.value == value) return entry.name;
  }
  return table[0].name;  // unreachable for a complete table; tests check completeness
}

template <typename Enum, std::size_t N>
std::optional<Enum> parse_name(const EnumName<Enum> (&table)[N], std::string_view text) {
  for (const auto& entry : table) {
    if (text == entry.name) return entry.value;
  }
  return std::nullopt;
}

// "debug, info, warn, error" with `separator` between the names, or "debug, info, warn or error"
// when `last_separator` is given.
template <typename Enum, std::size_t N>
std::string join_names(const EnumName<Enum> (&table)[N], std::string_view separator = ", ",
                       std::string_view last_separator = "") {
  std::string out;
  for (std::size_t i = 0; i < N; ++i) {
    if (i > 0) {
      out += (i + 1 == N && !last_separator.empty()) ? last_separator : separator;
    }
    out += table[i].name;
  }
  return out;
}

}  // namespace hwperf
