#include "config/schema_keys.h"

#include <memory>
#include <utility>

#include "common/text.h"

namespace hwperf::config_schema {

using namespace yaml_reader;

Key section(Problems& problems, const std::string& name, const std::string& path, Section keys) {
  auto shared = std::make_shared<Section>(std::move(keys));
  return Key{name,
             [&problems, path, shared](const YAML::Node& node) {
               Mapping mapping(problems, path);
               for (const auto& key : *shared) mapping.on(key.name, key.read);
               mapping.visit(node);
             },
             [shared](YAML::Emitter& out) {
               out << YAML::BeginMap;
               for (const auto& key : *shared) {
                 if (!key.present()) continue;
                 out << YAML::Key << key.name << YAML::Value;
                 key.dump(out);
               }
               out << YAML::EndMap;
             }};
}

std::function<void(YAML::Emitter&)> dump_quoted(const std::string& value) {
  return [&value](YAML::Emitter& out) { out << YAML::DoubleQuoted << value; };
}

Key nonempty_string_key(Problems& problems, const std::string& name, const std::string& path,
                        std::string& value) {
  return {name, read_nonempty_string(problems, path, value), dump_value(value)};
}

Key bool_key(Problems& problems, const std::string& name, const std::string& path, bool& value) {
  return {name, read_bool(problems, path, value), dump_value(value)};
}

Key between_key(Problems& problems, const std::string& name, const std::string& path, double& value,
                double minimum, double maximum, const std::string& unit) {
  return {name,
          [&problems, path, &value, minimum, maximum, unit](const YAML::Node& node) {
            read_non_negative(problems, path, value)(node);
            if (value < minimum || value > maximum) {
              problems.add(problems.at(node), path + ": expected " + format_number(minimum) +
                                                  " to " + format_number(maximum) + " " + unit);
            }
          },
          dump_value(value)};
}

Key zero_or_between_key(Problems& problems, const std::string& name, const std::string& path,
                        double& value, double minimum, double maximum,
                        const std::string& zero_means, const std::string& unit) {
  return {name,
          [&problems, path, &value, minimum, maximum, zero_means, unit](const YAML::Node& node) {
            read_non_negative(problems, path, value)(node);
            if (value > 0 && value < minimum) {
              problems.add(problems.at(node), path + ": expected 0 (" + zero_means +
                                                  ") or at least " + format_number(minimum) + " " +
                                                  unit);
            } else if (value > maximum) {
              problems.add(problems.at(node),
                           path + ": expected at most " + format_number(maximum) + " " + unit);
            }
          },
          dump_value(value)};
}

}  // namespace hwperf::config_schema
