// The key-table machinery the loader's schema is written in, shared by loader.cpp (top-level
// sections) and collector_keys.cpp (the collectors: section). Internal to config/: nothing outside
// the loader reads a Key.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "common/enum_names.h"
#include "config/config.h"
#include "config/yaml_reader.h"

namespace hwperf::config_schema {

// The schema, written once: each key with how it is read from YAML and how it is dumped. Reading
// walks it through Mapping (which reports unknown keys against the same list), --check-config
// walks it to print the effective configuration.
struct Key {
  std::string name;
  yaml_reader::Mapping::Handler read;
  std::function<void(YAML::Emitter&)> dump;
  std::function<bool()> present = [] { return true; };  // dumped only when it says so
};
using Section = std::vector<Key>;

Key section(yaml_reader::Problems& problems, const std::string& name, const std::string& path,
            Section keys);

template <typename T>
std::function<void(YAML::Emitter&)> dump_value(const T& value) {
  return [&value](YAML::Emitter& out) { out << value; };
}

std::function<void(YAML::Emitter&)> dump_quoted(const std::string& value);

template <typename Enum>
std::function<void(YAML::Emitter&)> dump_enum(const Enum& value) {
  return [&value](YAML::Emitter& out) { out << to_string(value); };
}

Key nonempty_string_key(yaml_reader::Problems& problems, const std::string& name,
                        const std::string& path, std::string& value);

Key bool_key(yaml_reader::Problems& problems, const std::string& name, const std::string& path,
             bool& value);

template <typename Enum, std::size_t N>
Key enum_key(yaml_reader::Problems& problems, const std::string& name, const std::string& path,
             Enum& value, const EnumName<Enum> (&table)[N]) {
  return {name, yaml_reader::read_enum(problems, path, value, table), dump_enum(value)};
}

// A number from `minimum` to `maximum`.
Key between_key(yaml_reader::Problems& problems, const std::string& name, const std::string& path,
                double& value, double minimum, double maximum, const std::string& unit);

// A number >= 0 where 0 means "decide for me", and otherwise between `minimum` and `maximum`.
Key zero_or_between_key(yaml_reader::Problems& problems, const std::string& name,
                        const std::string& path, double& value, double minimum, double maximum,
                        const std::string& zero_means, const std::string& unit);

// A metric name part as a user may write it ([a-z_][a-z0-9_]*).
bool valid_metric_base(const std::string& name);

// One event of an events list or a group: a name, or {event, metric, help}; the name checked as
// text (not empty, no control character, bounded). False, with a problem, when nothing usable
// was read.
bool read_event_item(yaml_reader::Problems& problems, const YAML::Node& item,
                     const std::string& item_path, PapiEventConfig& event);

// A counting collector's `groups:` list of group names (group_keys.cpp); dumped only when given.
Key group_list_key(yaml_reader::Problems& problems, const std::string& path,
                   std::vector<GroupRef>& groups, bool& groups_given);

// The top-level groups: section, the user's groups (group_keys.cpp).
Key groups_section(yaml_reader::Problems& problems, std::vector<GroupConfig>& groups);

// The collectors: section (collector_keys.cpp), bound to `collectors`.
Key collectors_section(yaml_reader::Problems& problems, CollectorsConfig& collectors);

}  // namespace hwperf::config_schema
