// The one name a header needs to declare the keys of a section of the configuration file
// (collectors/<name>/<name>_config.h, collectors/collector_entry.h) without the file reader's
// types: yaml-cpp stays in the readers' .cpp files, which include config/schema_keys.h.
#pragma once

namespace hwperf {

struct Config;
namespace yaml_reader {
class Problems;
}
namespace config_schema {
struct Key;
}

// A section's keys bound to its settings in `config`: read, dumped and described by the loader.
using SettingsKeys = config_schema::Key (*)(yaml_reader::Problems& problems, Config& config);

}  // namespace hwperf
