// The key-table machinery the configuration file's schema is written in: loader.cpp's own
// sections (web, paths, topology, log), each collector's section (collectors/<name>/
// <name>_config.cpp) and the events layer's lists and groups (collectors/events/event_keys.cpp).
// Only those readers include it: everything else takes the values they fill.
#pragma once

#include <cstddef>
#include <functional>
#include <initializer_list>
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

// collectors.<name>: a collector's settings, its `enabled` first, then the keys of each of `parts`
// in order.
Key collector_section(yaml_reader::Problems& problems, const std::string& name, bool& enabled,
                      std::initializer_list<Section> parts);

// A metric name part as a user may write it ([a-z_][a-z0-9_]*).
bool valid_metric_base(const std::string& name);

// Whether `text` compiles as the ECMAScript regular expression the collectors will use; when it
// does not, a problem at `node` says why.
bool check_regex(yaml_reader::Problems& problems, const YAML::Node& node, const std::string& path,
                 const std::string& text);

// A list of strings: each item is read as a non-empty string and handed to `each` with its node;
// anything but a list is one problem saying what the list holds.
void read_string_list(yaml_reader::Problems& problems, const YAML::Node& node,
                      const std::string& path, const std::string& holds,
                      const std::function<void(std::string, const YAML::Node&)>& each);

// How often a collector looks again in the background for what it counts (processes, cgroups).
Key rescan_interval_key(yaml_reader::Problems& problems, const std::string& path, double& value);

}  // namespace hwperf::config_schema
