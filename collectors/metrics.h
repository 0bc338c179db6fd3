// Metric names and families are built here and only here: the `hwperf_` namespace is fixed, names
// are validated when built (at startup, by the collector's constructor), and call sites never
// concatenate names themselves.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <prometheus/metric_family.h>

namespace hwperf {

inline constexpr std::string_view kNamespace = "hwperf";

// "hwperf_" + parts joined by '_'. Throws std::invalid_argument naming the result if it is not a
// valid Prometheus metric name, or if a counter name does not end in "_total".
std::string metric_name(std::initializer_list<std::string_view> parts);
std::string counter_name(std::initializer_list<std::string_view> parts);  // appends "_total"

// Lower-case snake_case from an arbitrary identifier ("PAGE-FAULTS" -> "page_faults").
std::string to_snake_case(std::string_view text);

using Labels = std::vector<std::pair<std::string, std::string>>;

prometheus::MetricFamily make_family(std::string name, std::string help,
                                     prometheus::MetricType type);
// A family named from parts, as metric_name() and counter_name() make them.
prometheus::MetricFamily make_gauge_family(std::initializer_list<std::string_view> parts,
                                           std::string help);
prometheus::MetricFamily make_counter_family(std::initializer_list<std::string_view> parts,
                                             std::string help);
// The only place a value becomes a double: counters stay uint64_t until the sample is built.
void add_counter(prometheus::MetricFamily& family, const Labels& labels, std::uint64_t value);
void add_counter(prometheus::MetricFamily& family, const Labels& labels, double value);
void add_gauge(prometheus::MetricFamily& family, const Labels& labels, double value);
// A gauge family of one sample: the availability and setting families every collector has.
prometheus::MetricFamily single_gauge(std::string name, std::string help, const Labels& labels,
                                      double value);
// Appends `family` to `out` unless it has no sample: a family with none would suggest series
// that cannot exist.
void append_unless_empty(std::vector<prometheus::MetricFamily>& out,
                         prometheus::MetricFamily family);

// Nanoseconds to seconds without losing the sub-second part once the count passes 2^53 ns
// (about 104 days of CPU time, which a machine-wide sum reaches quickly).
double nanoseconds_to_seconds(std::uint64_t ns);

}  // namespace hwperf
