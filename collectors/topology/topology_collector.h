// The `topology` collector: the machine's shape as info-style gauges, so that per-CPU series from
// other collectors can be joined to their core, package, NUMA node and caches in PromQL.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "collectors/collector.h"

namespace hwperf {

class Topology;

// Everything is computed here, once, and handed over as constant families (collector.h): a scrape
// never touches hwloc. The topology is not referenced after this returns. Families:
//   hwperf_cpu_info{cpu,core,package,numa_node} 1
//   hwperf_cpu_cache_size_bytes{cpu,cache}
//   hwperf_cpu_cache_line_size_bytes{cpu,cache}
//   hwperf_cpu_cache_associativity_ways{cpu,cache}
//   hwperf_cpu_cache_shared_cpus{cpu,cache}
std::unique_ptr<Collector> make_topology_collector(const Topology& topology);

}  // namespace hwperf
