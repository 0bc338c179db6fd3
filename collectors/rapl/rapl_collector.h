// The RAPL energy collector (collector name "rapl"): joules per package and domain, exact across
// counter wrap-around, through perf_event, powercap or the msr driver. See the "RAPL collector"
// section of README.md.
#pragma once

#include <memory>

#include "collectors/collector.h"
#include "config/config.h"
#include "topology/topology.h"

namespace hwperf {

// Probes the interfaces (config.interface, or perf -> powercap -> msr for auto), logs one line
// per interface that cannot be used with its remedy, and returns a collector that serves what it
// found -- or, with no RAPL at all, only says so in hwperf_rapl_energy_available 0. Never throws
// for missing hardware; throws ConfigError only for a configuration error (an unknown domain, a
// negative or non-finite number). Returns nullptr when config.enabled is false.
std::unique_ptr<Collector> make_rapl_collector(const RaplCollectorConfig& config,
                                               const PathsConfig& paths, const Topology& topology);

}  // namespace hwperf
