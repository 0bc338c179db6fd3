// The pieces make_rapl_collector() is built from, public to the tests so that a collector can be
// built around a fake EnergySource and a fake clock.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "collectors/collector.h"
#include "collectors/rapl/energy_source.h"
#include "collectors/rapl/rapl_engine.h"
#include "config/config.h"
#include "topology/topology.h"

namespace hwperf::rapl {

// Throws ConfigError naming collectors.rapl.<key> for every problem found.
DomainSet validate_rapl_config(const RaplCollectorConfig& config);

// The interfaces `auto` tries, in order; a forced interface is a list of one.
std::vector<RaplInterface> interface_order(RaplInterface choice);

// Tries the interfaces in order and stops at the first that works: every failure, then at most
// one success (last). Logs nothing; build_rapl_collector() does.
std::vector<ProbeResult> probe_interfaces(RaplInterface choice, const PathsConfig& paths,
                                          const Topology& topology, DomainSet wanted);

// The collector over the probe results: the successful one's source (if any) is moved into an
// engine, the wrap guard is started when a counter can wrap, and every outcome is logged once.
std::unique_ptr<Collector> build_rapl_collector(std::vector<ProbeResult> probes,
                                                const RaplCollectorConfig& config,
                                                const Topology& topology,
                                                RaplEngine::NowFn now = &Clock::now);

}  // namespace hwperf::rapl
