#include "collectors/metrics.h"

#include <cctype>
#include <stdexcept>

#include <prometheus/check_names.h>

namespace hwperf {
namespace {
std::string join(std::initializer_list<std::string_view> parts) {
  std::string name(kNamespace);
  for (std::string_view part : parts) {
    name += '_';
    name += part;
  }
  return name;
}

prometheus::ClientMetric labelled(const Labels& labels) {
  prometheus::ClientMetric metric;
  metric.label.reserve(labels.size());
  for (const auto& [name, value] : labels) metric.label.push_back({name, value});
  return metric;
}
}  // namespace

std::string metric_name(std::initializer_list<std::string_view> parts) {
  std::string name = join(parts);
  if (!prometheus::CheckMetricName(name) || name.find("__") != std::string::npos) {
    throw std::invalid_argument("invalid metric name \"" + name + "\"");
  }
  return name;
}

std::string counter_name(std::initializer_list<std::string_view> parts) {
  std::string name = metric_name(parts);
  return name + "_total";
}

std::string to_snake_case(std::string_view text) {
  std::string out;
  bool pending_separator = false;
  for (char c : text) {
    const auto uc = static_cast<unsigned char>(c);
    if (std::isalnum(uc)) {
      if (pending_separator && !out.empty()) out += '_';
      pending_separator = false;
      out += static_cast<char>(std::tolower(uc));
    } else {
      pending_separator = true;
    }
  }
  return out;
}

prometheus::MetricFamily make_family(std::string name, std::string help,
                                     prometheus::MetricType type) {
  prometheus::MetricFamily family;
  family.name = std::move(name);
  family.help = std::move(help);
  family.type = type;
  return family;
}

prometheus::MetricFamily make_gauge_family(std::initializer_list<std::string_view> parts,
                                           std::string help) {
  return make_family(metric_name(parts), std::move(help), prometheus::MetricType::Gauge);
}

prometheus::MetricFamily make_counter_family(std::initializer_list<std::string_view> parts,
                                             std::string help) {
  return make_family(counter_name(parts), std::move(help), prometheus::MetricType::Counter);
}

void add_counter(prometheus::MetricFamily& family, const Labels& labels, std::uint64_t value) {
  add_counter(family, labels, static_cast<double>(value));
}

void add_counter(prometheus::MetricFamily& family, const Labels& labels, double value) {
  auto metric = labelled(labels);
  metric.counter.value = value;
  family.metric.push_back(std::move(metric));
}

void add_gauge(prometheus::MetricFamily& family, const Labels& labels, double value) {
  auto metric = labelled(labels);
  metric.gauge.value = value;
  family.metric.push_back(std::move(metric));
}

prometheus::MetricFamily single_gauge(std::string name, std::string help, const Labels& labels,
                                      double value) {
  auto family = make_family(std::move(name), std::move(help), prometheus::MetricType::Gauge);
  add_gauge(family, labels, value);
  return family;
}

void append_unless_empty(std::vector<prometheus::MetricFamily>& out,
                         prometheus::MetricFamily family) {
  if (!family.metric.empty()) out.push_back(std::move(family));
}

double nanoseconds_to_seconds(std::uint64_t ns) {
  return static_cast<double>(ns / 1000000000u) + static_cast<double>(ns % 1000000000u) * 1e-9;
}

}  // namespace hwperf
