#include "config/loader.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <utility>

#include <yaml-cpp/yaml.h>

#include "common/cpu_list.h"
#include "common/files.h"
#include "common/text.h"
#include "common/enum_names.h"
#include "config/config_values.h"
#include "config/errors.h"
#include "config/yaml_reader.h"

namespace hwperf {
namespace {

using namespace yaml_reader;
using namespace config_values;

// Far beyond any real configuration; a bound so that a wrong file cannot exhaust memory.
constexpr std::size_t kMaxConfigBytes = 1 << 20;

// The schema, written once: each key with how it is read from YAML and how it is dumped. Reading
// walks it through Mapping (which reports unknown keys against the same list), --check-config
// walks it to print the effective configuration.
struct Key {
  std::string name;
  Mapping::Handler read;
  std::function<void(YAML::Emitter&)> dump;
  std::function<bool()> present = [] { return true; };  // dumped only when it says so
};
using Section = std::vector<Key>;

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

template <typename T>
std::function<void(YAML::Emitter&)> dump_value(const T& value) {
  return [&value](YAML::Emitter& out) { out << value; };
}

std::function<void(YAML::Emitter&)> dump_quoted(const std::string& value) {
  return [&value](YAML::Emitter& out) { out << YAML::DoubleQuoted << value; };
}

template <typename Enum>
std::function<void(YAML::Emitter&)> dump_enum(const Enum& value) {
  return [&value](YAML::Emitter& out) { out << to_string(value); };
}

Key nonempty_string_key(Problems& problems, const std::string& name, const std::string& path,
                        std::string& value) {
  return {name, read_nonempty_string(problems, path, value), dump_value(value)};
}

Key bool_key(Problems& problems, const std::string& name, const std::string& path, bool& value) {
  return {name, read_bool(problems, path, value), dump_value(value)};
}

template <typename Enum, std::size_t N>
Key enum_key(Problems& problems, const std::string& name, const std::string& path, Enum& value,
             const EnumName<Enum> (&table)[N]) {
  return {name, read_enum(problems, path, value, table), dump_enum(value)};
}

// A number from `minimum` to `maximum`.
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

// A number >= 0 where 0 means "decide for me", and otherwise between `minimum` and `maximum`.
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

// An `events:` list of a counting collector; dumped only when the user gave one.
Key events_key(Problems& problems, const std::string& path, std::vector<PapiEventConfig>& events,
               bool& given) {
  return {"events",
          [&problems, path, &events, &given](const YAML::Node& node) {
            read_event_list(problems, node, path, events, given);
          },
          [&events](YAML::Emitter& out) { dump_events(out, events); }, [&given] { return given; }};
}

Section schema(Problems& problems, Config& config) {
  auto& web = config.web;
  auto& paths = config.paths;
  auto& collectors = config.collectors;
  auto& papi = collectors.papi;
  auto& rapl = collectors.rapl;
  auto& process = collectors.process;
  auto& cgroup = collectors.cgroup;
  return {
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
      section(
          problems, "collectors", "collectors",
          {section(problems, "topology", "collectors.topology",
                   {bool_key(problems, "enabled", "collectors.topology.enabled",
                             collectors.topology.enabled)}),
           section(
               problems, "papi", "collectors.papi",
               {bool_key(problems, "enabled", "collectors.papi.enabled", papi.enabled),
                {"cpus",
                 [&problems, &papi](const YAML::Node& n) { read_cpus(problems, n, papi.cpus); },
                 [&papi](YAML::Emitter& out) {
                   out << YAML::DoubleQuoted << papi.cpus.to_string();
                 }},
                enum_key(problems, "granularity", "collectors.papi.granularity", papi.granularity,
                         kGranularityNames),
                enum_key(problems, "domain", "collectors.papi.domain", papi.domain,
                         kCountingDomainNames),
                enum_key(problems, "attach", "collectors.papi.attach", papi.attach,
                         kPapiAttachModeNames),
                bool_key(problems, "multiplex", "collectors.papi.multiplex", papi.multiplex),
                events_key(problems, "collectors.papi.events", papi.events, papi.events_given)}),

           section(
               problems, "rapl", "collectors.rapl",
               {bool_key(problems, "enabled", "collectors.rapl.enabled", rapl.enabled),
                enum_key(problems, "interface", "collectors.rapl.interface", rapl.interface,
                         kRaplInterfaceNames),
                {"domains",
                 [&problems, &rapl](const YAML::Node& n) { read_rapl_domains(problems, n, rapl); },
                 [&rapl](YAML::Emitter& out) {
                   out << YAML::Flow << YAML::BeginSeq;
                   for (RaplDomain domain : rapl.domains) out << to_string(domain);
                   out << YAML::EndSeq;
                 },
                 [&rapl] { return !rapl.domains.empty(); }},
                // Below 1 W every real energy delta would be rejected as implausible.
                zero_or_between_key(problems, "max_power_watts", "collectors.rapl.max_power_watts",
                                    rapl.max_power_watts, 1, kMaxPowerWatts, "from the hardware",
                                    "watt"),
                zero_or_between_key(problems, "wrap_guard_interval_seconds",
                                    "collectors.rapl.wrap_guard_interval_seconds",
                                    rapl.wrap_guard_interval_seconds, kMinWrapGuardIntervalSeconds,
                                    kMaxWrapGuardIntervalSeconds, "derived", "seconds")}),
           section(problems, "process", "collectors.process",
                   {bool_key(problems, "enabled", "collectors.process.enabled", process.enabled),
                    events_key(problems, "collectors.process.events", process.events,
                               process.events_given),
                    enum_key(problems, "domain", "collectors.process.domain", process.domain,
                             kCountingDomainNames),
                    bool_key(problems, "per_cpu", "collectors.process.per_cpu", process.per_cpu),
                    between_key(problems, "rescan_interval_seconds",
                                "collectors.process.rescan_interval_seconds",
                                process.rescan_interval_seconds, kMinRescanIntervalSeconds,
                                kMaxRescanIntervalSeconds, "seconds"),
                    {"targets",
                     [&problems, &process](const YAML::Node& n) {
                       read_process_targets(problems, n, process.targets);
                     },
                     [&process](YAML::Emitter& out) { dump_process_targets(out, process.targets); },
                     [&process] { return !process.targets.empty(); }}}),
           section(problems, "cgroup", "collectors.cgroup",
                   {bool_key(problems, "enabled", "collectors.cgroup.enabled", cgroup.enabled),
                    events_key(problems, "collectors.cgroup.events", cgroup.events,
                               cgroup.events_given),
                    {"granularity",
                     [&problems, &cgroup](const YAML::Node& n) {
                       const std::string path = "collectors.cgroup.granularity";
                       read_enum(problems, path, cgroup.granularity, kGranularityNames)(n);
                       if (cgroup.granularity != Granularity::package &&
                           cgroup.granularity != Granularity::machine) {
                         problems.add(problems.at(n),
                                      path +
                                          ": expected package or machine (a cgroup event per CPU "
                                          "and container would multiply the series by the CPUs)");
                       }
                     },
                     dump_enum(cgroup.granularity)},
                    {"roots",
                     [&problems, &cgroup](const YAML::Node& n) {
                       const std::string path = "collectors.cgroup.roots";
                       cgroup.roots.clear();
                       if (!n.IsSequence()) {
                         problems.add(problems.at(n), path + ": expected a list of cgroup paths");
                         return;
                       }
                       for (const auto& item : n) {
                         std::string text;
                         read_nonempty_string(problems, path, text)(item);
                         while (!text.empty() && text.front() == '/') text.erase(0, 1);
                         while (!text.empty() && text.back() == '/') text.pop_back();
                         if (text == ".." || text.rfind("../", 0) == 0 ||
                             text.find("/../") != std::string::npos ||
                             (text.size() >= 3 && text.compare(text.size() - 3, 3, "/..") == 0)) {
                           problems.add(item.Mark(),
                                        path + ": \"" + text + "\" leaves the hierarchy");
                           continue;
                         }
                         cgroup.roots.push_back({text, problems.where(item.Mark())});
                       }
                     },
                     [&cgroup](YAML::Emitter& out) {
                       out << YAML::Flow << YAML::BeginSeq;
                       for (const auto& root : cgroup.roots) out << "/" + root.path;
                       out << YAML::EndSeq;
                     },
                     [&cgroup] { return !cgroup.roots.empty(); }},
                    {"match",
                     [&problems, &cgroup](const YAML::Node& n) {
                       const std::string path = "collectors.cgroup.match";
                       cgroup.match.clear();
                       if (!n.IsSequence()) {
                         problems.add(problems.at(n),
                                      path + ": expected a list of regular expressions");
                         return;
                       }
                       for (const auto& item : n) {
                         std::string text;
                         read_nonempty_string(problems, path, text)(item);
                         if (text.empty()) continue;
                         try {
                           std::regex compiled(text, std::regex::ECMAScript);
                         } catch (const std::regex_error& e) {
                           problems.add(problems.at(item), path + ": \"" + text +
                                                               "\" is not a regular expression (" +
                                                               e.what() + ")");
                           continue;
                         }
                         cgroup.match.push_back({text, problems.where(item.Mark())});
                       }
                     },
                     [&cgroup](YAML::Emitter& out) {
                       out << YAML::Flow << YAML::BeginSeq;
                       for (const auto& pattern : cgroup.match) out << pattern.regex;
                       out << YAML::EndSeq;
                     },
                     [&cgroup] { return !cgroup.match.empty(); }},
                    {"max_cgroups",
                     [&problems, &cgroup](const YAML::Node& n) {
                       const std::string path = "collectors.cgroup.max_cgroups";
                       double value = cgroup.max_cgroups;
                       read_non_negative(problems, path, value)(n);
                       if (value < 1 || value > 65536 ||
                           value != static_cast<double>(static_cast<unsigned>(value))) {
                         problems.add(problems.at(n),
                                      path + ": expected a whole number from 1 to 65536");
                         return;
                       }
                       cgroup.max_cgroups = static_cast<unsigned>(value);
                     },
                     dump_value(cgroup.max_cgroups)},
                    between_key(problems, "rescan_interval_seconds",
                                "collectors.cgroup.rescan_interval_seconds",
                                cgroup.rescan_interval_seconds, kMinRescanIntervalSeconds,
                                kMaxRescanIntervalSeconds, "seconds")})}),
  };
}

void read_document(Problems& problems, const YAML::Node& root, Config& config) {
  const Section keys = schema(problems, config);
  Mapping top(problems, "the top level");
  for (const auto& key : keys) top.on(key.name, key.read);
  top.visit(root);
}

}  // namespace

Config parse_config_text(const std::string& yaml_text, const std::string& file_name) {
  Config config;
  config.source_file = file_name;
  Problems problems(file_name);
  try {
    const YAML::Node root = YAML::Load(yaml_text);
    read_document(problems, root, config);
  } catch (const YAML::ParserException& e) {
    problems.add(e.mark, "invalid YAML: " + e.msg);
  } catch (const YAML::Exception& e) {
    problems.add(e.mark, "invalid configuration: " + e.msg);
  }
  if (!problems.list().empty()) throw ConfigError(problems.list());
  return config;
}

Config load_config_file(const std::string& path) {
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
  return parse_config_text(text.value, path);
}

std::string dump_config(const Config& config) {
  Config copy = config;  // the schema binds to a mutable Config; dumping only reads it
  Problems unused("");
  const Section keys = schema(unused, copy);
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

std::vector<ConfigKeyInfo> describe_config_keys() {
  std::vector<ConfigKeyInfo> keys;
  Config config;
  Problems problems("");
  problems.describe_into(&keys);
  read_document(problems, YAML::Node(), config);
  const YAML::Node defaults = YAML::Load(dump_config(Config{}));
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
