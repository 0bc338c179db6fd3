#include "web/query.h"

#include <optional>

#include "common/text.h"

namespace hwperf {
namespace {

std::string decoded(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      out += ' ';
    } else if (text[i] == '%' && i + 2 < text.size()) {
      if (const auto byte = parse_u64(text.substr(i + 1, 2), 16)) {
        out += static_cast<char>(*byte);
        i += 2;
      } else {
        out += text[i];
      }
    } else {
      out += text[i];
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> query_values(std::string_view query, std::string_view key) {
  std::vector<std::string> values;
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const auto eq = pair.find('=');
    if (decoded(pair.substr(0, eq)) != key) continue;
    values.push_back(eq == std::string_view::npos ? "" : decoded(pair.substr(eq + 1)));
  }
  return values;
}

}  // namespace hwperf
