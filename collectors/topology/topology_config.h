// The topology collector's settings (collectors.topology) and their keys in the configuration
// file.
#pragma once

#include "config/config.h"
#include "config/settings_keys.h"

namespace hwperf {

struct TopologyCollectorConfig {
  bool enabled = true;
};

// collectors.topology, bound to config.get<TopologyCollectorConfig>().
config_schema::Key topology_settings_keys(yaml_reader::Problems& problems, Config& config);

}  // namespace hwperf
