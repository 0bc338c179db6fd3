#include "collectors/topology/topology_collector.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "collectors/metrics.h"
#include "topology/topology.h"

namespace hwperf {
namespace {

// The topology does not change while the process runs: every family is constant, serialized
// once by the exporter, and a scrape has nothing left to do here.
class TopologyCollector final : public Collector {
 public:
  explicit TopologyCollector(std::vector<prometheus::MetricFamily> families)
      : families_(std::move(families)) {}

  std::string name() const override { return "topology"; }

  void collect(std::vector<prometheus::MetricFamily>&) override {}

  void collect_constant(std::vector<prometheus::MetricFamily>& out) const override {
    out.insert(out.end(), families_.begin(), families_.end());
  }

 private:
  const std::vector<prometheus::MetricFamily> families_;
};

const std::string& info_name() {
  static const std::string name = metric_name({"cpu", "info"});
  return name;
}
const std::string& cache_size_name() {
  static const std::string name = metric_name({"cpu", "cache", "size", "bytes"});
  return name;
}
const std::string& cache_line_name() {
  static const std::string name = metric_name({"cpu", "cache", "line", "size", "bytes"});
  return name;
}
const std::string& cache_ways_name() {
  static const std::string name = metric_name({"cpu", "cache", "associativity", "ways"});
  return name;
}
const std::string& cache_shared_name() {
  static const std::string name = metric_name({"cpu", "cache", "shared", "cpus"});
  return name;
}

prometheus::MetricFamily cpu_info_family(const Topology& topology) {
  auto family = make_family(
      info_name(),
      "Where each CPU (Linux CPU number) sits in the machine; always 1. A core id is unique only "
      "together with its package. numa_node is empty when the machine reports no NUMA node.",
      prometheus::MetricType::Gauge);
  for (const HardwareThread& thread : topology.threads()) {
    add_gauge(
        family,
        {{"cpu", std::to_string(thread.cpu)},
         {"core", std::to_string(thread.core)},
         {"package", std::to_string(thread.package)},
         {"numa_node", thread.numa_node < 0 ? std::string() : std::to_string(thread.numa_node)}},
        1.0);
  }
  return family;
}

// A fully associative cache is one set holding every line: as many ways as it has lines.
double ways_of(const Cache& cache) {
  if (cache.associativity > 0) return cache.associativity;
  if (cache.associativity < 0 && cache.size_bytes > 0 && cache.line_size_bytes > 0) {
    return static_cast<double>(cache.size_bytes / cache.line_size_bytes);
  }
  return 0;  // unknown
}

std::vector<prometheus::MetricFamily> cache_families(const Topology& topology) {
  auto size = make_family(
      cache_size_name(),
      "Size of the CPU cache instance this CPU uses, per cache (L1d, L1i, L2, L3). A shared cache "
      "appears once per CPU sharing it, so do not sum across cpu. Absent when unknown.",
      prometheus::MetricType::Gauge);
  auto line = make_family(cache_line_name(),
                          "Line size of the CPU cache instance this CPU uses, per cache (L1d, L1i, "
                          "L2, L3). Absent when unknown.",
                          prometheus::MetricType::Gauge);
  auto ways = make_family(
      cache_ways_name(),
      "Ways of associativity of the CPU cache instance this CPU uses, per cache (L1d, L1i, L2, "
      "L3). A fully associative cache reports its number of lines (size / line size), and is "
      "absent if either is unknown. Absent when the associativity is unknown.",
      prometheus::MetricType::Gauge);
  auto shared = make_family(cache_shared_name(),
                            "Number of CPUs, this one included, that use the same instance of "
                            "this cache (1 for a cache private to the CPU).",
                            prometheus::MetricType::Gauge);

  // Caches are ordered by level and type; grouping them per CPU keeps each CPU's series together
  // and in L1d, L1i, L2, L3 order in the exposition.
  std::map<unsigned, std::vector<const Cache*>> by_cpu;
  for (const Cache& cache : topology.caches()) {
    for (unsigned cpu : cache.cpus) by_cpu[cpu].push_back(&cache);
  }
  for (const auto& [cpu, caches] : by_cpu) {
    for (const Cache* cache : caches) {
      const Labels labels{{"cpu", std::to_string(cpu)}, {"cache", cache->label()}};
      if (cache->size_bytes > 0) add_gauge(size, labels, static_cast<double>(cache->size_bytes));
      if (cache->line_size_bytes > 0) add_gauge(line, labels, cache->line_size_bytes);
      if (const double value = ways_of(*cache); value > 0) add_gauge(ways, labels, value);
      add_gauge(shared, labels, static_cast<double>(cache->cpus.size()));
    }
  }
  return {std::move(size), std::move(line), std::move(ways), std::move(shared)};
}

}  // namespace

std::unique_ptr<Collector> make_topology_collector(const Topology& topology) {
  std::vector<prometheus::MetricFamily> families;
  families.push_back(cpu_info_family(topology));
  for (auto& family : cache_families(topology)) {
    // Synthetic topologies, for one, never know associativity: no samples, no HELP either.
    if (!family.metric.empty()) families.push_back(std::move(family));
  }
  return std::make_unique<TopologyCollector>(std::move(families));
}

}  // namespace hwperf
