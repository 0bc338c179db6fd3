// Loads and validates the YAML configuration. Strict: unknown keys, wrong types and bad values
// are errors naming file:line:column and what was expected; every problem is reported at once.
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
