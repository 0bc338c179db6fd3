#include "collectors/events/emission.h"

#include <map>
#include <tuple>

namespace hwperf::events {

Labels level_labels(Granularity level, const HardwareThread& thread) {
  switch (level) {
    case Granularity::cpu:
      return {
          {"cpu", std::to_string(thread.cpu)},
          {"core", std::to_string(thread.core)},
          {"package", std::to_string(thread.package)},
          {"numa_node", thread.numa_node < 0 ? std::string() : std::to_string(thread.numa_node)}};
    case Granularity::core:
      return {{"core", std::to_string(thread.core)}, {"package", std::to_string(thread.package)}};
    case Granularity::package: return {{"package", std::to_string(thread.package)}};
    case Granularity::machine: return {};
  }
  return {};
}

std::vector<CounterSeries> series_at_level(Granularity level,
                                           const std::vector<HardwareThread>& threads) {
  using Key = std::tuple<unsigned, unsigned, unsigned>;
  std::map<Key, CounterSeries> grouped;
  for (std::size_t slot = 0; slot < threads.size(); ++slot) {
    const HardwareThread& thread = threads[slot];
    Key key{0, 0, 0};
    switch (level) {
      case Granularity::cpu: key = {thread.cpu, 0, 0}; break;
      case Granularity::core: key = {thread.package, thread.core, 0}; break;
      case Granularity::package: key = {thread.package, 0, 0}; break;
      case Granularity::machine: break;
    }
    CounterSeries& series = grouped[key];
    if (series.slots.empty()) series.labels = level_labels(level, thread);
    series.slots.push_back(slot);
  }
  std::vector<CounterSeries> series;
  series.reserve(grouped.size());
  for (auto& entry : grouped) series.push_back(std::move(entry.second));
  return series;
}

prometheus::MetricFamily counter_family(const std::string& name, const std::string& help) {
  return make_family(name, help, prometheus::MetricType::Counter);
}

double sample_value(std::uint64_t count, Unit unit) {
  return unit == Unit::nanoseconds ? nanoseconds_to_seconds(count) : static_cast<double>(count);
}

void add_count(prometheus::MetricFamily& family, const Labels& labels, std::uint64_t count,
               Unit unit) {
  add_counter(family, labels, sample_value(count, unit));
}

namespace {

std::uint64_t series_sum(const CounterSeries& one, const std::vector<std::uint64_t>& values,
                         std::size_t first) {
  std::uint64_t sum = 0;
  for (std::size_t slot : one.slots) sum += values[first + slot];
  return sum;
}

}  // namespace

std::size_t write_series(PreparedFamily::Writer& writer, std::size_t at,
                         const std::vector<CounterSeries>& series,
                         const std::vector<std::uint64_t>& values, std::size_t first, Unit unit) {
  for (const CounterSeries& one : series) {
    writer.sample(at++, sample_value(series_sum(one, values, first), unit));
  }
  return at;
}

void add_series(prometheus::MetricFamily& family, const std::vector<CounterSeries>& series,
                const std::vector<std::uint64_t>& values, std::size_t first, Unit unit,
                const Labels& leading) {
  for (const CounterSeries& one : series) {
    const std::uint64_t sum = series_sum(one, values, first);
    if (leading.empty()) {
      add_count(family, one.labels, sum, unit);
      continue;
    }
    Labels labels = leading;
    labels.insert(labels.end(), one.labels.begin(), one.labels.end());
    add_count(family, labels, sum, unit);
  }
}

}  // namespace hwperf::events
