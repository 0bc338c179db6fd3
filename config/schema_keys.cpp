#include "config/schema_keys.h"

#include <memory>
#include <regex>
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
            problems.describe_as(
                path, "a number from " + format_number(minimum) + " to " + format_number(maximum));
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
            problems.describe_as(path, "0, or a number from " + format_number(minimum) + " to " +
                                           format_number(maximum));
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

Key collector_section(Problems& problems, const std::string& name, bool& enabled,
                      std::initializer_list<Section> parts) {
  const std::string path = "collectors." + name;
  Section keys = {bool_key(problems, "enabled", path + ".enabled", enabled)};
  for (const auto& part : parts) keys.insert(keys.end(), part.begin(), part.end());
  return section(problems, name, path, std::move(keys));
}

bool valid_metric_base(const std::string& name) {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = (c >= 'a' && c <= 'z') || c == '_' || (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

bool check_regex(Problems& problems, const YAML::Node& node, const std::string& path,
                 const std::string& text) {
  try {
    std::regex compiled(text, std::regex::ECMAScript);
    return true;
  } catch (const std::regex_error& e) {
    problems.add(problems.at(node),
                 path + ": \"" + text + "\" is not a regular expression (" + e.what() + ")");
    return false;
  }
}

void read_string_list(Problems& problems, const YAML::Node& node, const std::string& path,
                      const std::string& holds,
                      const std::function<void(std::string, const YAML::Node&)>& each) {
  if (!node.IsSequence()) {
    problems.add(problems.at(node), path + ": expected a list of " + holds);
    return;
  }
  for (const auto& item : node) {
    std::string text;
    read_nonempty_string(problems, path, text)(item);
    each(std::move(text), item);
  }
}

Key rescan_interval_key(Problems& problems, const std::string& path, double& value) {
  return between_key(problems, "rescan_interval_seconds", path, value, kMinRescanIntervalSeconds,
                     kMaxRescanIntervalSeconds, "seconds");
}

}  // namespace hwperf::config_schema
