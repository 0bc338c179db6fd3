#include "exporter/exposition.h"

#include <algorithm>
#include <charconv>
#include <optional>

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

// RFC 9110 12.5.1: a media type takes the quality of the most specific range that matches it
// ("text/plain;q=0, */*" refuses text/plain). A range whose version parameter names another
// version does not match.
double media_quality(const std::vector<MediaRange>& ranges, std::string_view type,
                     std::string_view version) {
  const std::string_view major = type.substr(0, type.find('/'));
  int best_specificity = -1;
  double quality = 0;
  for (const auto& range : ranges) {
    int specificity = -1;
    if (range.value == type) {
      if (!range.version.empty() && range.version != version) continue;
      specificity = range.version.empty() ? 2 : 3;
    } else if (range.value.size() == major.size() + 2 &&
               range.value.compare(0, major.size(), major) == 0 &&
               range.value.compare(major.size(), 2, "/*") == 0) {
      specificity = 1;
    } else if (range.value == "*/*") {
      specificity = 0;
    }
    if (specificity < 0) continue;
    if (specificity > best_specificity) {
      best_specificity = specificity;
      quality = range.quality;
    } else if (specificity == best_specificity) {
      quality = std::max(quality, range.quality);
    }
  }
  return quality;
}

}  // namespace

ExpositionFormat negotiate_format(std::string_view accept) {
  const auto ranges = parse_list(accept);
  const double openmetrics_q = media_quality(ranges, "application/openmetrics-text", "1.0.0");
  const double text_q = media_quality(ranges, "text/plain", "0.0.4");
  // Text on a tie, and when nothing offered is acceptable: every scraper reads it.
  return openmetrics_q > 0 && openmetrics_q > text_q ? ExpositionFormat::openmetrics_1_0_0
                                                     : ExpositionFormat::text_0_0_4;
}

const char* content_type(ExpositionFormat format) {
  return format == ExpositionFormat::openmetrics_1_0_0
             ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
             : "text/plain; version=0.0.4; charset=utf-8";
}

bool accepts_gzip(std::string_view accept_encoding) {
  // RFC 9110 12.5.3: "*" stands only for codings not named in the field, so an explicit
  // "gzip;q=0" refuses gzip whatever "*" says; "x-gzip" is gzip (RFC 9110 8.4.1.3).
  std::optional<double> named;
  std::optional<double> any;
  for (const auto& range : parse_list(accept_encoding)) {
    if (range.value == "gzip" || range.value == "x-gzip") {
      named = std::max(named.value_or(0.0), range.quality);
    } else if (range.value == "*") {
      any = std::max(any.value_or(0.0), range.quality);
    }
  }
  return named ? *named > 0 : any.value_or(0.0) > 0;
}

}  // namespace hwperf
