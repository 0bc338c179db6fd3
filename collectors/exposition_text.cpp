#include "collectors/exposition_text.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "common/text.h"

namespace hwperf {
namespace {

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

// A sample line up to its value. Its length is known before it is written (label values rarely
// need escaping), so the text is copied into place in one resize, not appended piece by piece:
// a scrape writes one line per series, and a dozen appends each was a third of the text path.
void append_prefix(std::string& out, std::string_view name, std::string_view suffix,
                   const std::vector<prometheus::ClientMetric::Label>& labels) {
  std::size_t size = name.size() + suffix.size() + 1;
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

// How a family is named in each format: OpenMetrics types counters under the name without
// "_total", which their samples then carry as a suffix; text 0.0.4 keeps it in the TYPE line.
struct FamilyNaming {
  std::string_view name;
  std::string_view suffix;
  const char* type;
};

FamilyNaming naming(const prometheus::MetricFamily& family, ExpositionFormat format) {
  const bool openmetrics = format == ExpositionFormat::openmetrics_1_0_0;
  FamilyNaming naming{family.name, {}, openmetrics ? "unknown" : "untyped"};
  switch (family.type) {
    case prometheus::MetricType::Counter:
      naming.type = "counter";
      if (openmetrics && ends_with(naming.name, "_total")) {
        naming.name.remove_suffix(6);
        naming.suffix = "_total";
      }
      break;
    case prometheus::MetricType::Gauge: naming.type = "gauge"; break;
    case prometheus::MetricType::Untyped: break;
    case prometheus::MetricType::Summary:
    case prometheus::MetricType::Histogram: unsupported_type(family);
  }
  return naming;
}

// Text 0.0.4 (the format prometheus-cpp's TextSerializer writes, without its ostream and
// per-value snprintf): HELP before TYPE, escaping backslash and newline only. OpenMetrics 1.0:
// TYPE before HELP, which escapes '"' too.
void append_header(std::string& out, const prometheus::MetricFamily& family,
                   const FamilyNaming& named, ExpositionFormat format) {
  const bool openmetrics = format == ExpositionFormat::openmetrics_1_0_0;
  const auto help = [&] {
    if (family.help.empty()) return;
    out += "# HELP ";
    out += named.name;
    out += ' ';
    append_escaped(out, family.help, openmetrics);
    out += '\n';
  };
  if (!openmetrics) help();
  out += "# TYPE ";
  out += named.name;
  out += ' ';
  out += named.type;
  out += '\n';
  if (openmetrics) help();
}

}  // namespace

std::string family_header(const prometheus::MetricFamily& family, ExpositionFormat format) {
  std::string out;
  append_header(out, family, naming(family, format), format);
  return out;
}

std::string series_prefix(const prometheus::MetricFamily& family,
                          const std::vector<prometheus::ClientMetric::Label>& labels,
                          ExpositionFormat format) {
  const FamilyNaming named = naming(family, format);
  std::string out;
  append_prefix(out, named.name, named.suffix, labels);
  return out;
}

void append_value(std::string& out, double value) {
  std::array<char, 64> text{};
  const std::size_t size = format_value(text, value);
  const std::size_t at = out.size();
  out.resize(at + size + 1);
  std::memcpy(out.data() + at, text.data(), size);
  out[at + size] = '\n';
}

void append_families(std::string& out, const std::vector<prometheus::MetricFamily>& families,
                     ExpositionFormat format) {
  for (const auto& family : families) {
    const FamilyNaming named = naming(family, format);
    append_header(out, family, named, format);
    for (const auto& metric : family.metric) {
      append_prefix(out, named.name, named.suffix, metric.label);
      append_value(out, sample_value(family, metric));
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
