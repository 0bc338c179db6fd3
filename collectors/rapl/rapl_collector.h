// The RAPL energy collector (collector name "rapl"): joules per package and domain, exact across
// counter wrap-around, over whichever interface rapl_factory.h found working (perf_event,
// powercap or the msr driver). Public to the tests, so that a collector can be built around a
// fake EnergySource and a fake clock. See docs/collectors/rapl.md.
#pragma once

#include <memory>
#include <vector>

#include "collectors/collector.h"
#include "collectors/rapl/energy_source.h"
#include "collectors/rapl/rapl_engine.h"
#include "collectors/rapl/rapl_config.h"
#include "topology/topology.h"

namespace hwperf::rapl {

// The collector over the probe results: the successful one's source (if any) is moved into an
// engine, the wrap guard is started when a counter can wrap, and every outcome is logged once.
std::unique_ptr<Collector> build_rapl_collector(std::vector<ProbeResult> probes,
                                                const RaplCollectorConfig& config,
                                                const Topology& topology,
                                                RaplEngine::NowFn now = &Clock::now);

}  // namespace hwperf::rapl
