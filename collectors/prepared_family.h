// A family whose series are known when its collector is built (RAPL's domains, say): its HELP
// and TYPE lines and each series' text up to the value are written once per format, so that a
// scrape appends them and its values, with nothing built, copied or freed per sample. The bytes
// are those append_families writes for the same family (collectors/exposition_text.h).
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include <prometheus/metric_family.h>

#include "collectors/exposition_text.h"

namespace hwperf {

class PreparedFamily {
 public:
  // `shape`: the family's name, help and type, and a metric per series with its labels (the
  // values are not used). Throws std::logic_error for a summary or histogram.
  explicit PreparedFamily(const prometheus::MetricFamily& shape);

  std::size_t size() const { return series_.size(); }

  // Writes the family with a value for some of its series, in the order they are given: the
  // HELP and TYPE lines come with the first sample, so a family given none writes nothing (as
  // append_unless_empty leaves out a family without samples).
  class Writer {
   public:
    Writer(const PreparedFamily& family, std::string& out, ExpositionFormat format)
        : family_(family), out_(out), format_(static_cast<std::size_t>(format)) {}
    // The HELP and TYPE lines now, whether or not a sample follows: for a family that is
    // exported even when it has no series (append_families writes an empty family's header).
    void open() {
      if (!started_) {
        out_ += family_.header_[format_];
        started_ = true;
      }
    }
    void sample(std::size_t series, double value) {
      open();
      out_ += family_.series_[series][format_];
      append_value(out_, value);
    }

   private:
    const PreparedFamily& family_;
    std::string& out_;
    std::size_t format_;
    bool started_ = false;
  };

 private:
  static constexpr std::size_t kFormats = 2;  // ExpositionFormat's values
  std::array<std::string, kFormats> header_;
  std::vector<std::array<std::string, kFormats>> series_;
};

}  // namespace hwperf
