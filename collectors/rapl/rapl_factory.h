// From configuration to a running RAPL collector: validation, the interface probes in order, and
// make_rapl_collector(), which hands the first interface that works to build_rapl_collector().
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "collectors/collector.h"
#include "collectors/rapl/energy_source.h"
#include "collectors/rapl/rapl_collector.h"
#include "collectors/rapl/rapl_config.h"
#include "topology/topology.h"

namespace hwperf::rapl {

// The domains to export: those configured, or all. The loader (config/loader.cpp) has bounded
// every number already; nothing here validates them again.
DomainSet wanted_domains(const RaplCollectorConfig& config);

// The interfaces `auto` tries, in order; a forced interface is a list of one.
std::vector<RaplInterface> interface_order(RaplInterface choice);

// Tries the interfaces in order and stops at the first that works: every failure, then at most
// one success (last). Logs nothing; build_rapl_collector() does.
std::vector<ProbeResult> probe_interfaces(RaplInterface choice, const PathsConfig& paths,
                                          const Topology& topology, DomainSet wanted);

}  // namespace hwperf::rapl

namespace hwperf {

// Probes the interfaces (config.interface, or perf -> powercap -> msr for auto), logs one line
// per interface that cannot be used with its remedy, and returns a collector that serves what it
// found -- or, with no RAPL at all, only says so in hwperf_rapl_energy_available 0. Never throws
// for missing hardware. Returns nullptr when config.enabled is false.
std::unique_ptr<Collector> make_rapl_collector(const RaplCollectorConfig& config,
                                               const PathsConfig& paths, const Topology& topology);

}  // namespace hwperf
