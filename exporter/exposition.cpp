#include "exporter/exposition.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include <prometheus/text_serializer.h>
#include <zlib.h>

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

std::string format_value(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  std::array<char, 64> buffer{};
  const auto [end, ec] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  if (ec != std::errc()) throw std::runtime_error("cannot format a sample value");
  return std::string(buffer.data(), end);
}

void write_escaped(std::ostream& out, const std::string& text, bool escape_quote) {
  for (char c : text) {
    if (c == '\\') {
      out << "\\\\";
    } else if (c == '\n') {
      out << "\\n";
    } else if (c == '"' && escape_quote) {
      out << "\\\"";
    } else {
      out << c;
    }
  }
}

void write_sample(std::ostream& out, const std::string& name,
                  const std::vector<prometheus::ClientMetric::Label>& labels, double value) {
  out << name;
  if (!labels.empty()) {
    out << '{';
    bool first = true;
    for (const auto& label : labels) {
      if (!first) out << ',';
      first = false;
      out << label.name << "=\"";
      write_escaped(out, label.value, true);
      out << '"';
    }
    out << '}';
  }
  out << ' ' << format_value(value) << '\n';
}

// This exporter builds counters and gauges only (its own timings are gauges, not histograms), so
// a summary or histogram family is a programming error, reported rather than written wrongly.
[[noreturn]] void unsupported_type(const prometheus::MetricFamily& family) {
  throw std::logic_error("exposition: " + family.name +
                         " is a summary or histogram, which this exporter does not write");
}

// OpenMetrics 1.0: counters are typed under the name without "_total" and their samples carry
// it; unknown replaces untyped; the exposition ends with "# EOF".
void serialize_openmetrics(std::ostream& out,
                           const std::vector<prometheus::MetricFamily>& families) {
  for (const auto& family : families) {
    std::string name = family.name;
    const char* type = "unknown";
    switch (family.type) {
      case prometheus::MetricType::Counter:
        type = "counter";
        if (ends_with(name, "_total")) name.resize(name.size() - 6);
        break;
      case prometheus::MetricType::Gauge: type = "gauge"; break;
      case prometheus::MetricType::Untyped: type = "unknown"; break;
      case prometheus::MetricType::Summary:
      case prometheus::MetricType::Histogram: unsupported_type(family);
    }
    out << "# TYPE " << name << ' ' << type << '\n';
    if (!family.help.empty()) {
      out << "# HELP " << name << ' ';
      write_escaped(out, family.help, true);
      out << '\n';
    }
    for (const auto& metric : family.metric) {
      switch (family.type) {
        case prometheus::MetricType::Counter:
          write_sample(out, name + "_total", metric.label, metric.counter.value);
          break;
        case prometheus::MetricType::Gauge:
          write_sample(out, name, metric.label, metric.gauge.value);
          break;
        case prometheus::MetricType::Untyped:
          write_sample(out, name, metric.label, metric.untyped.value);
          break;
        case prometheus::MetricType::Summary:
        case prometheus::MetricType::Histogram:
          unsupported_type(family);
      }
    }
  }
  out << "# EOF\n";
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

// Owns a deflate stream so that deflateEnd runs on every path, exceptions included.
class DeflateStream {
 public:
  DeflateStream() {
    // windowBits 15 + 16 selects the gzip wrapper rather than raw zlib.
    if (deflateInit2(&stream_, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
                     Z_DEFAULT_STRATEGY) != Z_OK) {
      throw std::runtime_error("gzip: deflateInit2 failed");
    }
  }
  ~DeflateStream() { deflateEnd(&stream_); }
  DeflateStream(const DeflateStream&) = delete;
  DeflateStream& operator=(const DeflateStream&) = delete;
  z_stream* get() { return &stream_; }

 private:
  z_stream stream_{};
};

std::string gzip_compress(std::string_view data) {
  DeflateStream deflater;
  z_stream* stream = deflater.get();
  std::string out;
  out.resize(deflateBound(stream, static_cast<uLong>(data.size())));
  stream->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  stream->avail_in = static_cast<uInt>(data.size());
  stream->next_out = reinterpret_cast<Bytef*>(out.data());
  stream->avail_out = static_cast<uInt>(out.size());
  if (deflate(stream, Z_FINISH) != Z_STREAM_END) {
    throw std::runtime_error("gzip: deflate did not finish");
  }
  out.resize(stream->total_out);
  return out;
}

std::string serialize(const std::vector<prometheus::MetricFamily>& families,
                      ExpositionFormat format) {
  std::ostringstream out;
  if (format == ExpositionFormat::openmetrics_1_0_0) {
    serialize_openmetrics(out, families);
    return out.str();
  }
  // prometheus-cpp 1.0.1 writes HELP verbatim, so a backslash or newline in it would corrupt the
  // exposition; the 0.0.4 format wants them escaped. Copy only the families that need it.
  const auto needs_escape = [](const prometheus::MetricFamily& family) {
    return family.help.find_first_of("\\\n") != std::string::npos;
  };
  if (std::none_of(families.begin(), families.end(), needs_escape)) {
    prometheus::TextSerializer().Serialize(out, families);
    return out.str();
  }
  std::vector<prometheus::MetricFamily> escaped = families;
  for (auto& family : escaped) {
    if (!needs_escape(family)) continue;
    std::ostringstream help;
    write_escaped(help, family.help, false);
    family.help = help.str();
  }
  prometheus::TextSerializer().Serialize(out, escaped);
  return out.str();
}

}  // namespace hwperf
