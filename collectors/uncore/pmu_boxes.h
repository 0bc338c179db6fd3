// What the parts of the uncore plan share of a PMU's sysfs directory
// (<sysfs>/bus/event_source/devices/<pmu>): one event encoded from its format files, and the CPUs
// its cpumask names. Used by uncore_plan.cpp and memory_plan.cpp only.
#pragma once

#include <string>
#include <vector>

#include "collectors/perf/perf_event.h"
#include "topology/topology.h"

namespace hwperf::uncore {

std::string devices_dir(const std::string& sysfs_root);

// One event of one box, encoded from the box's type and format files; or the reason it cannot
// be (the file, and what is wrong with it).
struct EncodedEvent {
  perf::EventEncoding encoding;
  std::string problem;
};
// `event`: events/<event> of the box; when null, `builtin` is the description in the PMU's
// format terms. The encoding is named "<box>/<event or description>/".
EncodedEvent encode_box_event(const std::string& box_dir, const std::string& box, const char* event,
                              const char* builtin);

// The CPUs a box's cpumask names that the topology has; `problem` set when it names none, or
// cannot be read.
std::vector<const HardwareThread*> cpumask_threads(const std::string& box_dir,
                                                   const Topology& topology, std::string& problem);

}  // namespace hwperf::uncore
