#include "common/text.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace hwperf {

std::string_view trim(std::string_view text) {
  const char* space = " \t\r\n";
  const auto first = text.find_first_not_of(space);
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(space);
  return text.substr(first, last - first + 1);
}

std::optional<std::uint64_t> parse_u64(std::string_view text, int base) {
  if (base == 16 && text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    text.remove_prefix(2);
  }
  if (text.empty()) return std::nullopt;
  std::uint64_t value = 0;
  const auto b = static_cast<std::uint64_t>(base);
  for (char c : text) {
    std::uint64_t digit = 0;
    if (c >= '0' && c <= '9') {
      digit = static_cast<std::uint64_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      digit = static_cast<std::uint64_t>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      digit = static_cast<std::uint64_t>(c - 'A' + 10);
    } else {
      return std::nullopt;
    }
    if (digit >= b) return std::nullopt;
    if (value > (UINT64_MAX - digit) / b) return std::nullopt;  // overflow
    value = value * b + digit;
  }
  return value;
}

std::optional<std::uint64_t> parse_duration_ms(std::string_view text) {
  if (text.empty()) return std::nullopt;
  std::uint64_t total = 0;
  while (!text.empty()) {
    std::size_t digits = 0;
    while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
    const auto number = parse_u64(text.substr(0, digits));
    text.remove_prefix(digits);
    std::size_t unit_length = 0;
    while (unit_length < text.size() && (text[unit_length] < '0' || text[unit_length] > '9')) {
      ++unit_length;
    }
    const std::string_view unit = text.substr(0, unit_length);
    text.remove_prefix(unit_length);
    std::uint64_t scale = 0;
    if (unit == "ms")
      scale = 1;
    else if (unit == "s")
      scale = 1000;
    else if (unit == "m")
      scale = 60 * 1000;
    else if (unit == "h")
      scale = 60 * 60 * 1000;
    if (!number || scale == 0 || *number > (UINT64_MAX - total) / scale) return std::nullopt;
    total += *number * scale;
  }
  return total;
}

std::optional<double> parse_go_duration_seconds(std::string_view text) {
  double sign = 1;
  if (!text.empty() && (text.front() == '-' || text.front() == '+')) {
    if (text.front() == '-') sign = -1;
    text.remove_prefix(1);
  }
  if (text == "0") return 0.0;
  if (text.empty()) return std::nullopt;
  static constexpr std::pair<std::string_view, double> kUnits[] = {
      {"ns", 1e-9}, {"us", 1e-6}, {"\u00b5s", 1e-6}, {"\u03bcs", 1e-6},
      {"ms", 1e-3}, {"s", 1},     {"m", 60},         {"h", 3600}};
  double total = 0;
  while (!text.empty()) {
    std::size_t length = 0;
    bool digits = false;
    while (length < text.size() && text[length] >= '0' && text[length] <= '9') {
      ++length;
      digits = true;
    }
    if (length < text.size() && text[length] == '.') {
      ++length;
      while (length < text.size() && text[length] >= '0' && text[length] <= '9') {
        ++length;
        digits = true;
      }
    }
    if (!digits) return std::nullopt;  // Go refuses ".s" and a unit without a number
    const double number = std::strtod(std::string(text.substr(0, length)).c_str(), nullptr);
    text.remove_prefix(length);
    std::size_t unit_length = 0;
    while (unit_length < text.size() && text[unit_length] != '.' &&
           (text[unit_length] < '0' || text[unit_length] > '9')) {
      ++unit_length;
    }
    const std::string_view unit = text.substr(0, unit_length);
    text.remove_prefix(unit_length);
    double scale = 0;
    for (const auto& [name, seconds] : kUnits) {
      if (unit == name) scale = seconds;
    }
    if (scale == 0) return std::nullopt;  // a missing or unknown unit
    total += number * scale;
  }
  // Go's Duration is int64 nanoseconds: about 292 years.
  if (!(total <= 9.2e9)) return std::nullopt;
  return sign * total;
}

std::string join(const std::vector<std::string>& words, std::string_view separator) {
  std::string out;
  for (const auto& word : words) {
    if (!out.empty()) out += separator;
    out += word;
  }
  return out;
}

std::string to_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string to_upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

std::string format_number(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

std::string quoted_excerpt(std::string_view text, std::size_t limit) {
  std::string out = "\"";
  for (std::size_t i = 0; i < text.size() && i < limit; ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte >= 0x20 && byte < 0x7f && byte != '"' && byte != '\\') {
      out += static_cast<char>(byte);
    } else {
      char escaped[5];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
      out += escaped;
    }
  }
  out += '"';
  if (text.size() > limit) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

std::string errno_text(int error) {
  const char* name = ::strerrorname_np(error);
  std::string text = name != nullptr ? name : "errno " + std::to_string(error);
  text += " (";
  text += std::strerror(error);
  text += ")";
  return text;
}

namespace {

// One character and the text that stands for it once escaped.
struct CharEscape {
  char c;
  const char* replacement;
};

// What stands for `c` in `table`, or nullptr when `c` stands for itself.
template <std::size_t N>
const char* escape_of(char c, const CharEscape (&table)[N]) {
  for (const auto& escape : table) {
    if (escape.c == c) return escape.replacement;
  }
  return nullptr;
}

}  // namespace

std::string html_escape_text(std::string_view text) {
  static constexpr CharEscape kHtml[] = {
      {'<', "&lt;"}, {'>', "&gt;"}, {'&', "&amp;"}, {'"', "&quot;"}, {'\'', "&#39;"}};
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const char* escaped = escape_of(c, kHtml);
    out += escaped != nullptr ? std::string_view(escaped) : std::string_view(&c, 1);
  }
  return out;
}

std::string json_string(std::string_view text) {
  static constexpr CharEscape kJson[] = {{'"', "\\\""},   {'\\', "\\\\"},   {'\n', "\\n"},
                                         {'\t', "\\t"},   {'<', "\\u003c"}, {'>', "\\u003e"},
                                         {'&', "\\u0026"}};
  std::string out = "\"";
  out.reserve(text.size() + 2);
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (const char* escaped = escape_of(c, kJson)) {
      out += escaped;
    } else if (byte < 0x20 || byte == 0x7f) {
      char code[8];
      std::snprintf(code, sizeof code, "\\u%04x", static_cast<unsigned>(byte));
      out += code;
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

}  // namespace hwperf
