#include "exporter/exposition.h"

#include <algorithm>
#include <charconv>

#include "common/text.h"

namespace hwperf {
namespace {

// One element of an Accept / Accept-Encoding list: "type/sub;version=1.0.0;q=0.5".
struct MediaRange {
  std::string value;    // lower-cased, without parameters
  std::string version;  // "" when absent
  double quality = 1.0;
};

std::vector<MediaRange> parse_list(std::string_view header) {
  std::vector<MediaRange> out;
  while (!header.empty()) {
    const auto comma = header.find(',');
    std::string_view item = header.substr(0, comma);
    header = comma == std::string_view::npos ? std::string_view{} : header.substr(comma + 1);
    MediaRange range;
    auto semicolon = item.find(';');
    range.value = to_lower(trim(item.substr(0, semicolon)));
    while (semicolon != std::string_view::npos) {
      item = item.substr(semicolon + 1);
      semicolon = item.find(';');
      const std::string_view param = item.substr(0, semicolon);
      const auto eq = param.find('=');
      if (eq == std::string_view::npos) continue;
      const std::string key = to_lower(trim(param.substr(0, eq)));
      std::string_view value = trim(param.substr(eq + 1));
      if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
        value = value.substr(1, value.size() - 2);
      }
      if (key == "q") {
        double q = 0;
        const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), q);
        range.quality = (ec == std::errc() && end == value.data() + value.size()) ? q : 0.0;
      } else if (key == "version") {
        range.version = std::string(value);
      }
    }
    if (!range.value.empty()) out.push_back(std::move(range));
  }
  return out;
}

}  // namespace

ExpositionFormat negotiate_format(std::string_view accept) {
  double openmetrics_q = 0;
  double text_q = 0;
  for (const auto& range : parse_list(accept)) {
    if (range.value == "application/openmetrics-text") {
      if (range.version.empty() || range.version == "1.0.0") {
        openmetrics_q = std::max(openmetrics_q, range.quality);
      }
    } else if (range.value == "text/plain" || range.value == "text/*" || range.value == "*/*") {
      if (range.version.empty() || range.version == "0.0.4") {
        text_q = std::max(text_q, range.quality);
      }
    }
  }
  return openmetrics_q > 0 && openmetrics_q > text_q ? ExpositionFormat::openmetrics_1_0_0
                                                     : ExpositionFormat::text_0_0_4;
}

const char* content_type(ExpositionFormat format) {
  return format == ExpositionFormat::openmetrics_1_0_0
             ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
             : "text/plain; version=0.0.4; charset=utf-8";
}

bool accepts_gzip(std::string_view accept_encoding) {
  for (const auto& range : parse_list(accept_encoding)) {
    if ((range.value == "gzip" || range.value == "*") && range.quality > 0) return true;
  }
  return false;
}

}  // namespace hwperf
