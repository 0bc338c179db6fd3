// Loads and validates the YAML configuration. Strict: unknown keys, wrong types and bad values
// are errors naming file:line:column and what was expected; every problem is reported at once.
// config/ reads its own sections (web, paths, topology, log); the sections of the layers above
// (each collector's under collectors:, the event groups) are handed to it as keys bound to the
// Config being read: collectors/configuration.h, which knows them, does so.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"
#include "config/key_info.h"
#include "config/schema_keys.h"

namespace hwperf {

// The top-level keys the layers above config/ read into `config`, after config/'s own.
using SectionsAbove = config_schema::Section (*)(yaml_reader::Problems& problems, Config& config);

// Throws ConfigError (config/errors.h) listing every problem. An empty path means "no file":
// the defaults.
Config load_config_file(const std::string& path, SectionsAbove above);
Config parse_config_text(const std::string& yaml_text, const std::string& file_name,
                         SectionsAbove above);

// The effective configuration as YAML, in the same schema the loader reads (--check-config).
std::string dump_config(const Config& config, SectionsAbove above);

// Every key the loader reads, in its order, with what it takes and its default.
std::vector<ConfigKeyInfo> describe_config_keys(SectionsAbove above);

}  // namespace hwperf
