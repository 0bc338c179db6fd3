#include "exporter/exposition.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <stdexcept>

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

// Whole numbers below 2^53 (counts, bytes, microjoules: most samples) in plain digits, as
// prometheus-cpp writes them, rather than the shortest form's "1e+06"; anything else as the
// shortest text that reads back as the same double; NaN and the infinities as both formats
// spell them.
void append_value(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "NaN";
    return;
  }
  if (std::isinf(value)) {
    out += value > 0 ? "+Inf" : "-Inf";
    return;
  }
  std::array<char, 64> buffer{};
  constexpr double kExactIntegers = 9007199254740992.0;  // 2^53
  if (std::fabs(value) < kExactIntegers && value == std::trunc(value)) {
    const auto [end, ec] = std::to_chars(buffer.data(), buffer.data() + buffer.size(),
                                         static_cast<std::int64_t>(value));
    if (ec != std::errc()) throw std::runtime_error("cannot format a sample value");
    out.append(buffer.data(), end);
    return;
  }
  const auto [end, ec] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  if (ec != std::errc()) throw std::runtime_error("cannot format a sample value");
  out.append(buffer.data(), end);
}

// Both formats escape backslash and newline; label values (and OpenMetrics HELP) also '"'.
void append_escaped(std::string& out, std::string_view text, bool escape_quote) {
  // Runs between special characters are appended whole: most HELP texts and label values have
  // none, and one append per character was a fifth of a small scrape's CPU.
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

void append_sample(std::string& out, std::string_view name, std::string_view suffix,
                   const std::vector<prometheus::ClientMetric::Label>& labels, double value) {
  out += name;
  out += suffix;
  if (!labels.empty()) {
    out += '{';
    bool first = true;
    for (const auto& label : labels) {
      if (!first) out += ',';
      first = false;
      out += label.name;
      out += "=\"";
      append_escaped(out, label.value, true);
      out += '"';
    }
    out += '}';
  }
  out += ' ';
  append_value(out, value);
  out += '\n';
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

// Owns a deflate stream so that deflateEnd runs on every path, exceptions included.
namespace {

// A deflate stream allocates about 260 KiB (zlib 1.2.13 deflate.c deflateInit2_: window, hash
// chains and pending buffer, 64 KiB each at windowBits 15, memLevel 8) and frees it at the end of
// the response. glibc hands freed memory at the top of the heap back to the kernel beyond 128
// KiB (M_TRIM_THRESHOLD), so every gzip scrape page-faulted all of it in again: about 100 µs of a
// 2 KiB response's 110. Freed blocks are kept here instead, up to a few streams' worth, shared
// by all threads (zlib's zalloc/zfree hooks; zfree gives no size, so each block carries it).
class ZlibBlockPool {
 public:
  static void* allocate(void* /*opaque*/, uInt items, uInt size) {
    const std::size_t bytes = static_cast<std::size_t>(items) * size;
    {
      std::lock_guard<std::mutex> lock(instance().mutex_);
      auto& blocks = instance().free_;
      for (auto it = blocks.begin(); it != blocks.end(); ++it) {
        if (*static_cast<std::size_t*>(*it) == bytes) {
          void* block = *it;
          blocks.erase(it);
          instance().pooled_bytes_ -= bytes;
          return static_cast<char*>(block) + kHeader;
        }
      }
    }
    void* block = std::malloc(bytes + kHeader);
    if (block == nullptr) return Z_NULL;
    *static_cast<std::size_t*>(block) = bytes;
    return static_cast<char*>(block) + kHeader;
  }

  static void release(void* /*opaque*/, void* address) {
    if (address == nullptr) return;
    void* block = static_cast<char*>(address) - kHeader;
    const std::size_t bytes = *static_cast<std::size_t*>(block);
    {
      std::lock_guard<std::mutex> lock(instance().mutex_);
      if (instance().pooled_bytes_ + bytes <= kMaxPooledBytes) {
        instance().free_.push_back(block);
        instance().pooled_bytes_ += bytes;
        return;
      }
    }
    std::free(block);
  }

 private:
  static constexpr std::size_t kHeader = alignof(std::max_align_t);
  // Four streams: as many concurrent gzip scrapes as ever happen, with little memory held.
  static constexpr std::size_t kMaxPooledBytes = 4 * 272 * 1024;

  // Never destroyed, so no stream (one in a static, say) can outlive it.
  static ZlibBlockPool& instance() {
    static ZlibBlockPool* const pool = new ZlibBlockPool;
    return *pool;
  }

  std::mutex mutex_;
  std::vector<void*> free_;
  std::size_t pooled_bytes_ = 0;
};

}  // namespace

// The deflate formats a stream writes: a whole gzip member, or raw deflate blocks for one part
// of a member another part of the code frames.
enum class DeflateFormat { gzip, raw };

class DeflateStream {
 public:
  // `window_bits` (9 to 15) bounds how far back a match may point: no need for more than the
  // data's own size, and a smaller window and hash table are less memory to set up per stream.
  explicit DeflateStream(DeflateFormat format, int window_bits = 15, int memory_level = 8) {
    stream_.zalloc = &ZlibBlockPool::allocate;
    stream_.zfree = &ZlibBlockPool::release;
    // windowBits + 16 selects the gzip wrapper, a negative windowBits raw deflate. The fastest
    // level: an exposition repeats the same names and labels line after line, so level 1
    // already finds most of it, at a fraction of the default level's CPU on the node being
    // measured.
    const int bits = format == DeflateFormat::gzip ? window_bits + 16 : -window_bits;
    if (deflateInit2(&stream_, Z_BEST_SPEED, Z_DEFLATED, bits, memory_level, Z_DEFAULT_STRATEGY) !=
        Z_OK) {
      throw std::runtime_error("gzip: deflateInit2 failed");
    }
  }
  ~DeflateStream() { deflateEnd(&stream_); }
  DeflateStream(const DeflateStream&) = delete;
  DeflateStream& operator=(const DeflateStream&) = delete;

  // Compresses all of `data`, appending what deflate emits to `out`: Z_FINISH ends the stream
  // with a last block, Z_SYNC_FLUSH ends the output on a byte boundary with blocks that are not.
  void feed(std::string_view data, int flush, std::string& out) {
    stream_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
    stream_.avail_in = static_cast<uInt>(data.size());
    for (;;) {
      const std::size_t used = out.size();
      const std::size_t room =
          std::max<std::size_t>(deflateBound(&stream_, stream_.avail_in), 4096);
      out.resize(used + room);
      stream_.next_out = reinterpret_cast<Bytef*>(out.data() + used);
      stream_.avail_out = static_cast<uInt>(room);
      const int rc = deflate(&stream_, flush);
      out.resize(used + room - stream_.avail_out);
      if (rc == Z_STREAM_END) return;
      if (rc != Z_OK && rc != Z_BUF_ERROR) throw std::runtime_error("gzip: deflate failed");
      if (flush != Z_FINISH && stream_.avail_in == 0 && stream_.avail_out != 0) return;
    }
  }

 private:
  z_stream stream_{};
};

namespace {

// RFC 1952 section 2.3: ID1 ID2, CM = 8 (deflate), no flags, no time, no extra flags, OS = 3
// (Unix), as zlib's own gzip wrapper writes it.
constexpr char kGzipHeader[] = {'\x1f', '\x8b', '\x08', 0, 0, 0, 0, 0, 0, '\x03'};

void append_little_endian_32(std::string& out, unsigned long value) {
  for (int shift = 0; shift < 32; shift += 8) {
    out.push_back(static_cast<char>((value >> shift) & 0xFF));
  }
}

// The smallest window (9 to 15 bits) that covers `size` bytes.
int window_bits_for(std::size_t size) {
  int bits = 9;
  while (bits < 15 && (std::size_t{1} << bits) < size) ++bits;
  return bits;
}

unsigned long crc_of(std::string_view data) {
  return crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(data.data()),
               static_cast<uInt>(data.size()));
}

}  // namespace

std::string gzip_compress(std::string_view data) {
  DeflateStream deflater(DeflateFormat::gzip);
  std::string out;
  deflater.feed(data, Z_FINISH, out);
  return out;
}

PrefixedGzip::PrefixedGzip(std::string_view prefix)
    : head_(kGzipHeader, sizeof kGzipHeader),
      prefix_crc_(crc_of(prefix)),
      prefix_size_(prefix.size()) {
  DeflateStream deflater(DeflateFormat::raw, window_bits_for(prefix.size()));
  deflater.feed(prefix, Z_SYNC_FLUSH, head_);
}

std::string PrefixedGzip::compress(std::string_view rest) const {
  std::string out = head_;
  // A small rest gets a small window and hash table: less for deflateInit2 to set up.
  const int window_bits = window_bits_for(rest.size());
  DeflateStream deflater(DeflateFormat::raw, window_bits, std::min(8, window_bits - 6));
  deflater.feed(rest, Z_FINISH, out);
  append_little_endian_32(
      out, crc32_combine(prefix_crc_, crc_of(rest), static_cast<z_off_t>(rest.size())));
  append_little_endian_32(out,
                          static_cast<unsigned long>((prefix_size_ + rest.size()) & 0xFFFFFFFFu));
  return out;
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
