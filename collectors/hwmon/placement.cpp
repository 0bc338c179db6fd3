#include "collectors/hwmon/placement.h"

#include <algorithm>
#include <optional>

#include "common/text.h"

namespace hwperf::hwmon {
namespace {

std::string describe(const FoundSensor& sensor) {
  return sensor.spec.chip + " " + sensor.spec.sensor +
         (sensor.spec.label.empty() ? "" : " (\"" + sensor.spec.label + "\")");
}

std::string id_list(const std::vector<unsigned>& ids) {
  std::vector<std::string> words;
  for (unsigned id : ids) words.push_back(std::to_string(id));
  return words.empty() ? "none" : join(words);
}

bool contains(const std::vector<unsigned>& ids, unsigned id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

// How the sockets the labels name map to packages: by id when every one is an id, by rank when
// every one is below the package count, else by id where one matches.
enum class SocketRule { by_id, by_rank };

SocketRule socket_rule(const std::vector<FoundSensor>& sensors,
                       const std::vector<unsigned>& packages) {
  bool all_ids = true;
  bool all_ranks = true;
  for (const auto& sensor : sensors) {
    if (!sensor.socket) continue;
    all_ids = all_ids && contains(packages, *sensor.socket);
    all_ranks = all_ranks && *sensor.socket < packages.size();
  }
  return !all_ids && all_ranks ? SocketRule::by_rank : SocketRule::by_id;
}

// The package of the topology's CPUs on NUMA node `node`, if they all share one.
std::optional<unsigned> package_of_node(const Topology& topology, int node) {
  std::optional<unsigned> package;
  for (const auto& thread : topology.threads()) {
    if (thread.numa_node != node) continue;
    if (package && *package != thread.package) return std::nullopt;
    package = thread.package;
  }
  return package;
}

std::optional<unsigned> place_one(const FoundSensor& sensor, SocketRule rule,
                                  const std::vector<unsigned>& packages, const Topology& topology) {
  if (sensor.socket) {
    if (rule == SocketRule::by_rank) return packages[*sensor.socket];
    if (contains(packages, *sensor.socket)) return *sensor.socket;
    return std::nullopt;
  }
  if (packages.size() == 1) return packages.front();
  if (sensor.numa_node >= 0) return package_of_node(topology, sensor.numa_node);
  return std::nullopt;
}

}  // namespace

SensorPlacement place_sensors(std::vector<FoundSensor>& sensors, const Topology& topology) {
  SensorPlacement placement;
  const std::vector<unsigned> packages = topology.packages();
  const SocketRule rule = socket_rule(sensors, packages);
  if (rule == SocketRule::by_rank) {
    placement.notes.push_back("the meters number their sockets from 0 while the packages are " +
                              id_list(packages) +
                              ": socket N is taken as the package of rank N in that order");
  }
  std::vector<FoundSensor> kept;
  for (auto& sensor : sensors) {
    if (kind_info(sensor.spec.kind).per_package) {
      sensor.spec.package = place_one(sensor, rule, packages, topology);
      if (!sensor.spec.package) {
        placement.refused.push_back(
            describe(sensor) + ": " +
            (sensor.socket ? "names socket " + std::to_string(*sensor.socket) +
                                 ", which is no package of the topology (" + id_list(packages) + ")"
                           : "no package of the topology (" + id_list(packages) +
                                 ") can be told from the device (no numa_node)") +
            "; not exported");
        continue;
      }
    }
    kept.push_back(std::move(sensor));
  }
  sensors = std::move(kept);
  return placement;
}

}  // namespace hwperf::hwmon
