#include "collectors/topology/topology_config.h"

#include "config/schema_keys.h"

namespace hwperf {

config_schema::Key topology_settings_keys(yaml_reader::Problems& problems, Config& config) {
  using namespace config_schema;
  auto& topology = config.get<TopologyCollectorConfig>();
  return collector_section(problems, "topology", topology.enabled, {});
}

}  // namespace hwperf
