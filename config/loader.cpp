#include "config/loader.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "common/files.h"
#include "common/text.h"
#include "config/errors.h"
#include "config/schema_keys.h"
#include "config/yaml_reader.h"

namespace hwperf {
namespace {

using namespace yaml_reader;
using namespace config_schema;

// Far beyond any real configuration; a bound so that a wrong file cannot exhaust memory.
constexpr std::size_t kMaxConfigBytes = 1 << 20;
// Machines have at most a few thousand CPUs (Linux NR_CPUS is 8192 at most); a synthetic
// description of more is a typo that would make hwloc build millions of objects.
constexpr std::uint64_t kMaxSyntheticCpus = 65536;

// The number of PUs a synthetic description ("pack:2 core:4 pu:2", levels may carry
// "(attributes)") stands for: the product of the level counts; 0 when it cannot be read.
std::uint64_t synthetic_cpu_count(const std::string& description) {
  std::uint64_t product = 1;
  std::istringstream words(description);
  std::string word;
  bool any = false;
  while (words >> word) {
    const auto colon = word.find(':');
    if (colon == std::string::npos) continue;
    std::size_t end = colon + 1;
    while (end < word.size() && std::isdigit(static_cast<unsigned char>(word[end]))) ++end;
    const auto count = parse_u64(std::string_view(word).substr(colon + 1, end - colon - 1));
    if (!count) return 0;
    any = true;
    if (*count != 0 && product > kMaxSyntheticCpus * 4 / *count) return kMaxSyntheticCpus * 4;
    product *= *count;
  }
  return any ? product : 0;
}

void read_topology_source(Problems& problems, const YAML::Node& node, TopologyConfig& out) {
  const std::string path = "topology.source";
  const std::string expected = "system, xml:PATH or synthetic:DESCRIPTION";
  const auto marked = marked_scalar(problems, node, path, expected, out.mark);
  if (!marked) return;
  const std::string& text = *marked;
  if (text == "system") {
    out.kind = TopologyConfig::Kind::system;
    out.argument.clear();
  } else if (text.rfind("xml:", 0) == 0 && text.size() > 4) {
    out.kind = TopologyConfig::Kind::xml;
    out.argument = text.substr(4);
  } else if (text.rfind("synthetic:", 0) == 0 && text.size() > 10) {
    out.kind = TopologyConfig::Kind::synthetic;
    out.argument = text.substr(10);
    if (synthetic_cpu_count(out.argument) > kMaxSyntheticCpus) {
      problems.add(problems.at(node), path + ": the synthetic description stands for more than " +
                                          std::to_string(kMaxSyntheticCpus) + " CPUs");
    }
  } else {
    problems.add(problems.at(node), path + ": expected " + expected + ", got \"" + text + "\"");
  }
}

Section schema(Problems& problems, Config& config, SectionsAbove above) {
  auto& web = config.web;
  auto& paths = config.paths;
  Section keys = {
      section(problems, "web", "web",
              {{"listen_address",
                [&problems, &web](const YAML::Node& node) {
                  read_nonempty_string(problems, "web.listen_address", web.listen_address)(node);
                  web.listen_address_mark = problems.where(node.Mark());
                },
                dump_quoted(web.listen_address)},
               {"telemetry_path",
                [&problems, &web](const YAML::Node& node) {
                  read_nonempty_string(problems, "web.telemetry_path", web.telemetry_path)(node);
                  if (const auto problem = telemetry_path_problem(web.telemetry_path);
                      !web.telemetry_path.empty() && !problem.empty()) {
                    problems.add(problems.at(node), "web.telemetry_path: " + problem);
                  }
                },
                dump_value(web.telemetry_path)}}),
      section(problems, "paths", "paths",
              {nonempty_string_key(problems, "sysfs", "paths.sysfs", paths.sysfs),
               nonempty_string_key(problems, "procfs", "paths.procfs", paths.procfs),
               nonempty_string_key(problems, "devfs", "paths.devfs", paths.devfs)}),
      section(problems, "topology", "topology",
              {{"source",
                [&problems, &config](const YAML::Node& n) {
                  read_topology_source(problems, n, config.topology);
                },
                [&config](YAML::Emitter& out) { out << config.topology.to_string(); }}}),
      section(problems, "log", "log",
              {enum_key(problems, "level", "log.level", config.log_level, kLogLevelNames)}),
  };
  for (auto& key : above(problems, config)) keys.push_back(std::move(key));
  return keys;
}

void read_document(Problems& problems, const YAML::Node& root, Config& config,
                   SectionsAbove above) {
  const Section keys = schema(problems, config, above);
  Mapping top(problems, "the top level");
  for (const auto& key : keys) top.on(key.name, key.read);
  top.visit(root);
}

}  // namespace

Config parse_config_text(const std::string& yaml_text, const std::string& file_name,
                         SectionsAbove above) {
  Config config;
  config.source_file = file_name;
  Problems problems(file_name);
  try {
    const YAML::Node root = YAML::Load(yaml_text);
    read_document(problems, root, config, above);
  } catch (const YAML::ParserException& e) {
    problems.add(e.mark, "invalid YAML: " + e.msg);
  } catch (const YAML::Exception& e) {
    problems.add(e.mark, "invalid configuration: " + e.msg);
  }
  if (!problems.list().empty()) throw ConfigError(problems.list());
  return config;
}

Config load_config_file(const std::string& path, SectionsAbove above) {
  if (path.empty()) return Config{};
  // A regular file read up to a bound: a directory, /dev/zero or a FIFO named by mistake is an
  // error, not an empty or endless configuration, and cannot block startup.
  const auto text = read_regular_file(path, kMaxConfigBytes);
  if (text.error == EFBIG) {
    throw ConfigError({path + ": larger than " + std::to_string(kMaxConfigBytes >> 20) +
                       " MiB; not a configuration file"});
  }
  if (!text.ok()) {
    throw ConfigError({path + ": cannot read the configuration file (" + errno_text(text.error) +
                       (text.error == ENOTSUP ? ": not a regular file" : "") + ")"});
  }
  return parse_config_text(text.value, path, above);
}

std::string dump_config(const Config& config, SectionsAbove above) {
  Config copy = config;  // the schema binds to a mutable Config; dumping only reads it
  Problems unused("");
  const Section keys = schema(unused, copy, above);
  YAML::Emitter out;
  out << YAML::BeginMap;
  for (const auto& key : keys) {
    if (!key.present()) continue;
    out << YAML::Key << key.name << YAML::Value;
    key.dump(out);
  }
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

std::vector<ConfigKeyInfo> describe_config_keys(SectionsAbove above) {
  std::vector<ConfigKeyInfo> keys;
  Config config;
  Problems problems("");
  problems.describe_into(&keys);
  read_document(problems, YAML::Node(), config, above);
  const YAML::Node defaults = YAML::Load(dump_config(Config{}, above));
  for (auto& key : keys) {
    if (key.section) continue;
    std::vector<YAML::Node> path{defaults};  // node references cannot be reseated
    std::istringstream parts(key.path);
    for (std::string part; std::getline(parts, part, '.') && path.back().IsMap();) {
      const YAML::Node& parent = path.back();
      path.push_back(parent[part]);
    }
    const YAML::Node& node = path.back();
    if (path.size() !=
            static_cast<std::size_t>(std::count(key.path.begin(), key.path.end(), '.')) + 2 ||
        !node.IsDefined()) {
      continue;
    }
    YAML::Emitter out;
    out << YAML::Flow << node;
    key.default_value = out.c_str();
  }
  return keys;
}

}  // namespace hwperf
