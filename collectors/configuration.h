// The configuration file as this exporter reads it: config/'s own sections (web, paths, topology,
// log), then under collectors: each registered collector's section, as its entry's settings keys
// give it (collectors/<name>/<name>_config.h), then the event groups the user defines
// (collectors/events/event_keys.h). One schema reads, dumps (--check-config) and describes
// (--print-reference) the file.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"
#include "config/key_info.h"

namespace hwperf {

// Throws ConfigError (config/errors.h) listing every problem. An empty path means "no file":
// the defaults.
Config load_config_file(const std::string& path);
Config parse_config_text(const std::string& yaml_text, const std::string& file_name);

// The effective configuration as YAML, in the same schema the loader reads (--check-config).
std::string dump_config(const Config& config);

// Every key the loader reads, in its order, with what it takes and its default.
std::vector<ConfigKeyInfo> describe_config_keys();

}  // namespace hwperf
