#include "exporter/exposition.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

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

// Whole numbers below 2^53 (counts, bytes, microjoules: most samples) in plain digits, as
// prometheus-cpp writes them, rather than the shortest form's "1e+06"; anything else as the
// shortest text that reads back as the same double; NaN and the infinities as both formats
// spell them. Returns the length written into `buffer`.
std::size_t format_value(std::array<char, 64>& buffer, double value) {
  const auto copy = [&buffer](std::string_view text) {
    std::memcpy(buffer.data(), text.data(), text.size());
    return text.size();
  };
  if (std::isnan(value)) return copy("NaN");
  if (std::isinf(value)) return copy(value > 0 ? "+Inf" : "-Inf");
  constexpr double kExactIntegers = 9007199254740992.0;  // 2^53
  const auto [end, ec] = std::fabs(value) < kExactIntegers && value == std::trunc(value)
                             ? std::to_chars(buffer.data(), buffer.data() + buffer.size(),
                                             static_cast<std::int64_t>(value))
                             : std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  if (ec != std::errc()) throw std::runtime_error("cannot format a sample value");
  return static_cast<std::size_t>(end - buffer.data());
}

// Both formats escape backslash and newline; label values (and OpenMetrics HELP) also '"'.
void append_escaped(std::string& out, std::string_view text, bool escape_quote) {
  // Most HELP texts and label values have no special character: memchr (vectorised) finds that
  // out faster than a loop over the characters, and the text is appended in one piece.
  if (text.empty()) return;
  const auto lacks = [text](char c) { return std::memchr(text.data(), c, text.size()) == nullptr; };
  if (lacks('\\') && lacks('\n') && (!escape_quote || lacks('"'))) {
    out += text;
    return;
  }
  // Runs between special characters are appended whole: one append per character was a fifth
  // of a small scrape's CPU.
  std::size_t run = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c != '\\' && c != '\n' && (c != '"' || !escape_quote)) continue;
    out.append(text.data() + run, i - run);
    out += c == '\n' ? "\\n" : c == '"' ? "\\\"" : "\\\\";
    run = i + 1;
  }
  out.append(text.data() + run, text.size() - run);
}

bool needs_escaping(std::string_view text, bool escape_quote) {
  if (text.empty()) return false;
  const auto has = [text](char c) { return std::memchr(text.data(), c, text.size()) != nullptr; };
  return has('\\') || has('\n') || (escape_quote && has('"'));
}

// One sample line. Its length is known before it is written (label values rarely need
// escaping), so the line is copied into place in one resize, not appended piece by piece: a
// scrape writes one line per series, and a dozen appends each was a third of the text path.
void append_sample(std::string& out, std::string_view name, std::string_view suffix,
                   const std::vector<prometheus::ClientMetric::Label>& labels, double value) {
  std::array<char, 64> value_text{};
  const std::size_t value_size = format_value(value_text, value);
  std::size_t size = name.size() + suffix.size() + 1 + value_size + 1;
  bool escaping = false;
  for (const auto& label : labels) {
    size += label.name.size() + label.value.size() + 4;  // name="value" and ',' or '{'
    escaping = escaping || needs_escaping(label.value, true);
  }
  if (!labels.empty()) size += 1;  // '}'
  if (escaping) {
    out += name;
    out += suffix;
    char separator = '{';
    for (const auto& label : labels) {
      out += separator;
      separator = ',';
      out += label.name;
      out += "=\"";
      append_escaped(out, label.value, true);
      out += '"';
    }
    if (!labels.empty()) out += '}';
    out += ' ';
    out.append(value_text.data(), value_size);
    out += '\n';
    return;
  }
  const std::size_t at = out.size();
  out.resize(at + size);
  char* p = out.data() + at;
  const auto put = [&p](std::string_view text) {
    // An empty view may hold no pointer at all, which memcpy must never be given.
    if (text.empty()) return;
    std::memcpy(p, text.data(), text.size());
    p += text.size();
  };
  put(name);
  put(suffix);
  char separator = '{';
  for (const auto& label : labels) {
    *p++ = separator;
    separator = ',';
    put(label.name);
    put("=\"");
    put(label.value);
    *p++ = '"';
  }
  if (!labels.empty()) *p++ = '}';
  *p++ = ' ';
  put({value_text.data(), value_size});
  *p++ = '\n';
}

// This exporter builds counters and gauges only (its own timings are gauges, not histograms), so
// a summary or histogram family is a programming error, reported rather than written wrongly.
[[noreturn]] void unsupported_type(const prometheus::MetricFamily& family) {
  throw std::logic_error("exposition: " + family.name +
                         " is a summary or histogram, which this exporter does not write");
}

double sample_value(const prometheus::MetricFamily& family,
                    const prometheus::ClientMetric& metric) {
  switch (family.type) {
    case prometheus::MetricType::Counter: return metric.counter.value;
    case prometheus::MetricType::Gauge: return metric.gauge.value;
    case prometheus::MetricType::Untyped: return metric.untyped.value;
    case prometheus::MetricType::Summary:
    case prometheus::MetricType::Histogram: break;
  }
  unsupported_type(family);
}

// Text 0.0.4 (the format prometheus-cpp's TextSerializer writes, without its ostream and
// per-value snprintf): HELP escapes backslash and newline only, counters keep "_total" in the
// TYPE line, untyped is "untyped".
void append_text_family(std::string& out, const prometheus::MetricFamily& family) {
  const char* type = "untyped";
  switch (family.type) {
    case prometheus::MetricType::Counter: type = "counter"; break;
    case prometheus::MetricType::Gauge: type = "gauge"; break;
    case prometheus::MetricType::Untyped: break;
    case prometheus::MetricType::Summary:
    case prometheus::MetricType::Histogram: unsupported_type(family);
  }
  if (!family.help.empty()) {
    out += "# HELP ";
    out += family.name;
    out += ' ';
    append_escaped(out, family.help, false);
    out += '\n';
  }
  out += "# TYPE ";
  out += family.name;
  out += ' ';
  out += type;
  out += '\n';
  for (const auto& metric : family.metric) {
    append_sample(out, family.name, {}, metric.label, sample_value(family, metric));
  }
}

// OpenMetrics 1.0: counters are typed under the name without "_total" and their samples carry
// it; unknown replaces untyped; TYPE comes before HELP.
void append_openmetrics_family(std::string& out, const prometheus::MetricFamily& family) {
  std::string_view name = family.name;
  std::string_view suffix;
  const char* type = "unknown";
  switch (family.type) {
    case prometheus::MetricType::Counter:
      type = "counter";
      if (ends_with(name, "_total")) {
        name.remove_suffix(6);
        suffix = "_total";
      }
      break;
    case prometheus::MetricType::Gauge: type = "gauge"; break;
    case prometheus::MetricType::Untyped: break;
    case prometheus::MetricType::Summary:
    case prometheus::MetricType::Histogram: unsupported_type(family);
  }
  out += "# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
  if (!family.help.empty()) {
    out += "# HELP ";
    out += name;
    out += ' ';
    append_escaped(out, family.help, true);
    out += '\n';
  }
  for (const auto& metric : family.metric) {
    append_sample(out, name, suffix, metric.label, sample_value(family, metric));
  }
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

void append_families(std::string& out, const std::vector<prometheus::MetricFamily>& families,
                     ExpositionFormat format) {
  for (const auto& family : families) {
    if (format == ExpositionFormat::openmetrics_1_0_0) {
      append_openmetrics_family(out, family);
    } else {
      append_text_family(out, family);
    }
  }
}

std::string_view end_of_exposition(ExpositionFormat format) {
  return format == ExpositionFormat::openmetrics_1_0_0 ? "# EOF\n" : "";
}

std::string serialize(const std::vector<prometheus::MetricFamily>& families,
                      ExpositionFormat format) {
  std::string out;
  append_families(out, families, format);
  out += end_of_exposition(format);
  return out;
}

}  // namespace hwperf
