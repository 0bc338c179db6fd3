// Which package a per-package meter measures, asked of the Topology value: Linux package ids are
// not dense (a two-socket NVIDIA Grace reports 36 and 2364), so a socket a label names is matched
// to the packages the topology has, never used as a package id unchecked.
#pragma once

#include <string>
#include <vector>

#include "collectors/hwmon/hwmon_sysfs.h"
#include "topology/topology.h"

namespace hwperf::hwmon {

struct SensorPlacement {
  std::vector<std::string> notes;    // how sockets were matched, for the log
  std::vector<std::string> refused;  // sensors that could not be placed (removed), and why
};

// Sets spec.package of every per-package sensor and removes those it cannot place:
// - sensors whose label names a socket ("CPU Power Socket 1"): if every socket named is a package
//   id of the topology, by id; else if every one is below the number of packages, as the rank of
//   the package in ascending id order (firmware that numbers its sockets 0, 1 on a machine whose
//   ids are 36, 2364); else by id where one matches;
// - sensors whose label names none (X-Gene): the one package of a one-package machine, else the
//   package of the CPUs on the device's NUMA node.
SensorPlacement place_sensors(std::vector<FoundSensor>& sensors, const Topology& topology);

}  // namespace hwperf::hwmon
