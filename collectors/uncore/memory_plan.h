// The memory traffic part of the uncore plan (uncore_plan.h): which family of memory controller
// PMUs this machine has, and one counter per box, event and cpumask CPU.
#pragma once

#include <string>

#include "collectors/uncore/uncore_plan.h"
#include "topology/topology.h"

namespace hwperf::uncore {

// Adds the counters of the first memory family found under `devices` (the order and the
// families are in memory_plan.cpp, each cited) and sets the states of memory_read,
// memory_write and memory_total: a family counts reads and writes apart or together, and the
// quantities it does not count are `absent`, naming what it counts instead.
void plan_memory(const std::string& devices, const Topology& topology, UncorePlan& plan);

}  // namespace hwperf::uncore
