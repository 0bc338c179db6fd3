#include "collectors/topology/topology_collector.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "collectors/events/emission.h"
#include "collectors/metrics.h"
#include "topology/topology.h"

namespace hwperf {
namespace {

// The topology does not change while the process runs: every family is constant, serialized
// once by the exporter, and a scrape has nothing left to do here.
class TopologyCollector final : public Collector, public ConstantFamilies {
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

prometheus::MetricFamily cpu_info_family(const Topology& topology) {
  auto family = make_gauge_family(
      {"cpu", "info"},
      "Where each CPU (Linux CPU number) sits in the machine; always 1. A core id is unique only "
      "together with its package. numa_node is empty when the machine reports no NUMA node.");
  for (const HardwareThread& thread : topology.threads()) {
    add_gauge(family, events::level_labels(Granularity::cpu, thread), 1.0);
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
  // One family per property of a cache; a value of 0 is unknown and exports no sample.
  struct Property {
    prometheus::MetricFamily family;
    double (*value)(const Cache&);
  };
  Property properties[] = {
      {make_gauge_family({"cpu", "cache", "size", "bytes"},
                         "Size of the CPU cache instance this CPU uses, per cache (L1d, L1i, L2, "
                         "L3). A shared cache appears once per CPU sharing it, so do not sum "
                         "across cpu. Absent when unknown."),
       [](const Cache& cache) { return static_cast<double>(cache.size_bytes); }},
      {make_gauge_family({"cpu", "cache", "line", "size", "bytes"},
                         "Line size of the CPU cache instance this CPU uses, per cache (L1d, L1i, "
                         "L2, L3). Absent when unknown."),
       [](const Cache& cache) { return static_cast<double>(cache.line_size_bytes); }},
      {make_gauge_family({"cpu", "cache", "associativity", "ways"},
                         "Ways of associativity of the CPU cache instance this CPU uses, per "
                         "cache (L1d, L1i, L2, L3). A fully associative cache reports its number "
                         "of lines (size / line size), and is absent if either is unknown. Absent "
                         "when the associativity is unknown."),
       &ways_of},
      {make_gauge_family({"cpu", "cache", "shared", "cpus"},
                         "Number of CPUs, this one included, that use the same instance of this "
                         "cache (1 for a cache private to the CPU)."),
       [](const Cache& cache) { return static_cast<double>(cache.cpus.size()); }},
  };

  // Caches are ordered by level and type; grouping them per CPU keeps each CPU's series together
  // and in L1d, L1i, L2, L3 order in the exposition.
  std::map<unsigned, std::vector<const Cache*>> by_cpu;
  for (const Cache& cache : topology.caches()) {
    for (unsigned cpu : cache.cpus) by_cpu[cpu].push_back(&cache);
  }
  for (const auto& [cpu, caches] : by_cpu) {
    for (const Cache* cache : caches) {
      const Labels labels{{"cpu", std::to_string(cpu)}, {"cache", cache->label()}};
      for (auto& property : properties) {
        if (const double value = property.value(*cache); value > 0) {
          add_gauge(property.family, labels, value);
        }
      }
    }
  }
  std::vector<prometheus::MetricFamily> families;
  for (auto& property : properties) families.push_back(std::move(property.family));
  return families;
}

}  // namespace

std::unique_ptr<Collector> make_topology_collector(const Topology& topology) {
  std::vector<prometheus::MetricFamily> families;
  families.push_back(cpu_info_family(topology));
  // Synthetic topologies, for one, never know associativity: no samples, no HELP either.
  for (auto& family : cache_families(topology)) append_unless_empty(families, std::move(family));
  return std::make_unique<TopologyCollector>(std::move(families));
}

}  // namespace hwperf
