#include "config/loader.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <utility>

#include <yaml-cpp/yaml.h>

#include "common/cpu_list.h"
#include "config/errors.h"

namespace hwperf {
namespace {

// Collects every problem instead of stopping at the first: a user fixing a config file should
// see all of them in one run.
class Problems {
 public:
  explicit Problems(std::string file) : file_(std::move(file)) {}
  void add(const YAML::Mark& mark, const std::string& message) {
    problems_.push_back(where(mark).to_string() + ": " + message);
  }
  // An empty value ("key:" with nothing after it) has no position of its own; yaml-cpp marks it
  // where the next token starts. The key is where the user should look.
  YAML::Mark at(const YAML::Node& node) const { return node.IsNull() ? key_mark : node.Mark(); }
  YAML::Mark key_mark;

  SourceMark where(const YAML::Mark& mark) const {
    return SourceMark{file_, mark.line + 1, mark.column + 1};
  }
  const std::vector<std::string>& list() const { return problems_; }

 private:
  std::string file_;
  std::vector<std::string> problems_;
};

std::string join(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : ", ") + w;
  return out;
}

// Visits the keys of one mapping, reporting unknown and duplicate keys against the schema.
class Mapping {
 public:
  using Handler = std::function<void(const YAML::Node& value)>;

  Mapping(Problems& problems, std::string path) : problems_(problems), path_(std::move(path)) {}

  Mapping& on(const std::string& key, Handler handler) {
    keys_.push_back(key);
    handlers_.emplace_back(key, std::move(handler));
    return *this;
  }

  void visit(const YAML::Node& node) {
    if (!node || node.IsNull()) return;  // an empty section keeps its defaults
    if (!node.IsMap()) {
      problems_.add(problems_.at(node), path_ + ": expected a mapping with keys " + join(keys_));
      return;
    }
    std::set<std::string> seen;
    for (const auto& entry : node) {
      const std::string key = entry.first.as<std::string>();
      if (!seen.insert(key).second) {
        problems_.add(entry.first.Mark(), "duplicate key \"" + key + "\" in " + path_);
        continue;
      }
      bool known = false;
      for (auto& [name, handler] : handlers_) {
        if (name == key) {
          problems_.key_mark = entry.first.Mark();
          handler(entry.second);
          known = true;
        }
      }
      if (!known) {
        problems_.add(entry.first.Mark(), "unknown key \"" + key + "\" in " + path_ +
                                              " (expected one of: " + join(keys_) + ")");
      }
    }
  }

 private:
  Problems& problems_;
  std::string path_;
  std::vector<std::string> keys_;
  std::vector<std::pair<std::string, Handler>> handlers_;
};

bool is_scalar(Problems& problems, const YAML::Node& node, const std::string& path,
               const std::string& expected) {
  if (node.IsScalar()) return true;
  problems.add(problems.at(node), path + ": expected " + expected);
  return false;
}

Mapping::Handler read_string(Problems& problems, const std::string& path, std::string& out,
                             SourceMark* mark = nullptr) {
  return [&problems, path, &out, mark](const YAML::Node& node) {
    if (!is_scalar(problems, node, path, "a string")) return;
    out = node.as<std::string>();
    if (mark) *mark = problems.where(node.Mark());
  };
}

Mapping::Handler read_nonempty_string(Problems& problems, const std::string& path,
                                      std::string& out) {
  return [&problems, path, &out](const YAML::Node& node) {
    if (!is_scalar(problems, node, path, "a non-empty string")) return;
    const auto value = node.as<std::string>();
    if (value.empty()) {
      problems.add(problems.at(node), path + ": expected a non-empty string");
      return;
    }
    out = value;
  };
}

Mapping::Handler read_bool(Problems& problems, const std::string& path, bool& out) {
  return [&problems, path, &out](const YAML::Node& node) {
    const std::string expected = "true or false";
    if (!is_scalar(problems, node, path, expected)) return;
    const auto text = node.as<std::string>();
    if (text == "true") {
      out = true;
    } else if (text == "false") {
      out = false;
    } else {
      problems.add(problems.at(node), path + ": expected " + expected + ", got \"" + text + "\"");
    }
  };
}

Mapping::Handler read_non_negative(Problems& problems, const std::string& path, double& out) {
  return [&problems, path, &out](const YAML::Node& node) {
    const std::string expected = "a number >= 0";
    if (!is_scalar(problems, node, path, expected)) return;
    const auto text = node.as<std::string>();
    try {
      std::size_t used = 0;
      const double value = std::stod(text, &used);
      // stod also accepts "inf" and "nan"; neither is a usable power or period.
      if (used != text.size() || !std::isfinite(value) || value < 0) {
        throw std::invalid_argument(text);
      }
      out = value;
    } catch (const std::exception&) {
      problems.add(problems.at(node), path + ": expected " + expected + ", got \"" + text + "\"");
    }
  };
}

template <typename Enum>
Mapping::Handler read_enum(Problems& problems, const std::string& path, Enum& out,
                           std::vector<std::pair<std::string, Enum>> choices) {
  return [&problems, path, &out, choices](const YAML::Node& node) {
    std::vector<std::string> names;
    for (const auto& [name, value] : choices) names.push_back(name);
    const std::string expected = "one of " + join(names);
    if (!is_scalar(problems, node, path, expected)) return;
    const auto text = node.as<std::string>();
    for (const auto& [name, value] : choices) {
      if (name == text) {
        out = value;
        return;
      }
    }
    problems.add(problems.at(node), path + ": expected " + expected + ", got \"" + text + "\"");
  };
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

void read_topology_source(Problems& problems, const YAML::Node& node, TopologyConfig& out) {
  const std::string path = "topology.source";
  const std::string expected = "system, xml:PATH or synthetic:DESCRIPTION";
  if (!is_scalar(problems, node, path, expected)) return;
  const auto text = node.as<std::string>();
  out.mark = problems.where(node.Mark());
  if (text == "system") {
    out.kind = TopologyConfig::Kind::system;
    out.argument.clear();
  } else if (text.rfind("xml:", 0) == 0 && text.size() > 4) {
    out.kind = TopologyConfig::Kind::xml;
    out.argument = text.substr(4);
  } else if (text.rfind("synthetic:", 0) == 0 && text.size() > 10) {
    out.kind = TopologyConfig::Kind::synthetic;
    out.argument = text.substr(10);
  } else {
    problems.add(problems.at(node), path + ": expected " + expected + ", got \"" + text + "\"");
  }
}

void read_papi_events(Problems& problems, const YAML::Node& node, PapiCollectorConfig& out) {
  const std::string path = "collectors.papi.events";
  out.events_given = true;
  out.events.clear();
  if (!node.IsSequence()) {
    problems.add(problems.at(node), path + ": expected a list of event names or {event, metric, help}");
    return;
  }
  if (node.size() == 0) {
    problems.add(problems.at(node), path + ": the list is empty; name at least one event, or remove "
                                     "the key for the default set (or set enabled: false)");
    return;
  }
  std::size_t index = 0;
  for (const auto& item : node) {
    const std::string item_path = path + "[" + std::to_string(index++) + "]";
    PapiEventConfig event;
    event.mark = problems.where(item.Mark());
    if (item.IsScalar()) {
      event.event = item.as<std::string>();
    } else if (item.IsMap()) {
      Mapping(problems, item_path)
          .on("event", read_nonempty_string(problems, item_path + ".event", event.event))
          .on("metric", read_string(problems, item_path + ".metric", event.metric))
          .on("help", read_string(problems, item_path + ".help", event.help))
          .visit(item);
      if (!item["event"].IsDefined()) {
        problems.add(item.Mark(), item_path + ": missing required key \"event\"");
      }
    } else {
      problems.add(item.Mark(), item_path + ": expected an event name or {event, metric, help}");
      continue;
    }
    if (!event.metric.empty() && !valid_metric_base(event.metric)) {
      problems.add(item.Mark(), item_path + ".metric: \"" + event.metric +
                                    "\" is not a valid metric name part (use [a-z_][a-z0-9_]*)");
    }
    if (!event.event.empty()) out.events.push_back(std::move(event));
  }
}

void read_cpus(Problems& problems, const YAML::Node& node, PapiCollectorConfig& out) {
  const std::string path = "collectors.papi.cpus";
  const std::string expected = "\"all\" or a CPU list such as \"0-3,8\"";
  if (!is_scalar(problems, node, path, expected)) return;
  out.cpus = node.as<std::string>();
  out.cpus_mark = problems.where(node.Mark());
  if (out.cpus == "all") return;
  try {
    parse_cpu_list(out.cpus);
  } catch (const std::invalid_argument& e) {
    problems.add(problems.at(node), path + ": expected " + expected + ": " + e.what());
  }
}

const std::vector<std::string>& rapl_domain_names() {
  static const std::vector<std::string> names{"package", "core", "uncore", "dram", "psys"};
  return names;
}

void read_rapl_domains(Problems& problems, const YAML::Node& node, RaplCollectorConfig& out) {
  const std::string path = "collectors.rapl.domains";
  const std::string expected = "a list of " + join(rapl_domain_names());
  if (!node.IsSequence()) {
    problems.add(problems.at(node), path + ": expected " + expected);
    return;
  }
  out.domains.clear();
  for (const auto& item : node) {
    if (!is_scalar(problems, item, path, expected)) continue;
    const auto name = item.as<std::string>();
    bool known = false;
    for (const auto& valid : rapl_domain_names()) known = known || valid == name;
    if (!known) {
      problems.add(item.Mark(),
                   path + ": unknown domain \"" + name + "\" (expected one of " +
                       join(rapl_domain_names()) + ")");
      continue;
    }
    out.domains.push_back(name);
  }
}

void read_document(Problems& problems, const YAML::Node& root, Config& config) {
  auto& web = config.web;
  auto& paths = config.paths;
  auto& papi = config.collectors.papi;
  auto& rapl = config.collectors.rapl;

  Mapping web_map(problems, "web");
  web_map.on("listen_address", read_nonempty_string(problems, "web.listen_address", web.listen_address))
      .on("telemetry_path", [&](const YAML::Node& node) {
        read_nonempty_string(problems, "web.telemetry_path", web.telemetry_path)(node);
        if (web.telemetry_path.front() != '/') {
          problems.add(problems.at(node), "web.telemetry_path: expected a path starting with /");
        }
      });

  Mapping paths_map(problems, "paths");
  paths_map.on("sysfs", read_nonempty_string(problems, "paths.sysfs", paths.sysfs))
      .on("procfs", read_nonempty_string(problems, "paths.procfs", paths.procfs))
      .on("devfs", read_nonempty_string(problems, "paths.devfs", paths.devfs));

  Mapping topology_map(problems, "topology");
  topology_map.on("source", [&](const YAML::Node& n) { read_topology_source(problems, n, config.topology); });

  Mapping log_map(problems, "log");
  log_map.on("level", read_enum<LogLevel>(problems, "log.level", config.log_level,
                                          {{"debug", LogLevel::debug},
                                           {"info", LogLevel::info},
                                           {"warn", LogLevel::warn},
                                           {"error", LogLevel::error}}));

  Mapping topology_collector(problems, "collectors.topology");
  topology_collector.on("enabled", read_bool(problems, "collectors.topology.enabled",
                                             config.collectors.topology.enabled));

  Mapping papi_map(problems, "collectors.papi");
  papi_map.on("enabled", read_bool(problems, "collectors.papi.enabled", papi.enabled))
      .on("cpus", [&](const YAML::Node& n) { read_cpus(problems, n, papi); })
      .on("granularity", read_enum<Granularity>(problems, "collectors.papi.granularity",
                                                papi.granularity,
                                                {{"cpu", Granularity::cpu},
                                                 {"core", Granularity::core},
                                                 {"package", Granularity::package},
                                                 {"machine", Granularity::machine}}))
      .on("domain", read_enum<CountingDomain>(problems, "collectors.papi.domain", papi.domain,
                                              {{"user", CountingDomain::user},
                                               {"kernel", CountingDomain::kernel},
                                               {"all", CountingDomain::all}}))
      .on("attach", read_enum<PapiAttachMode>(problems, "collectors.papi.attach", papi.attach,
                                              {{"auto", PapiAttachMode::automatic},
                                               {"cpu_attach", PapiAttachMode::cpu_attach},
                                               {"qualifier", PapiAttachMode::qualifier}}))
      .on("multiplex", read_bool(problems, "collectors.papi.multiplex", papi.multiplex))
      .on("events", [&](const YAML::Node& n) { read_papi_events(problems, n, papi); });

  Mapping rapl_map(problems, "collectors.rapl");
  rapl_map.on("enabled", read_bool(problems, "collectors.rapl.enabled", rapl.enabled))
      .on("interface", read_enum<RaplInterface>(problems, "collectors.rapl.interface",
                                                rapl.interface,
                                                {{"auto", RaplInterface::automatic},
                                                 {"powercap", RaplInterface::powercap},
                                                 {"perf", RaplInterface::perf},
                                                 {"msr", RaplInterface::msr}}))
      .on("domains", [&](const YAML::Node& n) { read_rapl_domains(problems, n, rapl); })
      .on("max_power_watts", [&](const YAML::Node& node) {
        const std::string path = "collectors.rapl.max_power_watts";
        read_non_negative(problems, path, rapl.max_power_watts)(node);
        // Below 1 W every real energy delta would be rejected as implausible.
        if (rapl.max_power_watts > 0 && rapl.max_power_watts < 1) {
          problems.add(problems.at(node), path + ": expected 0 (from the hardware) or at least 1 watt");
        }
      })
      .on("wrap_guard_interval_seconds", [&](const YAML::Node& node) {
        const std::string path = "collectors.rapl.wrap_guard_interval_seconds";
        read_non_negative(problems, path, rapl.wrap_guard_interval_seconds)(node);
        // Faster than the hardware updates (about 1 ms) would only burn CPU.
        if (rapl.wrap_guard_interval_seconds > 0 && rapl.wrap_guard_interval_seconds < 0.001) {
          problems.add(problems.at(node), path + ": expected 0 (derived) or at least 0.001 seconds");
        }
      });

  Mapping collectors_map(problems, "collectors");
  collectors_map.on("topology", [&](const YAML::Node& n) { topology_collector.visit(n); })
      .on("papi", [&](const YAML::Node& n) { papi_map.visit(n); })
      .on("rapl", [&](const YAML::Node& n) { rapl_map.visit(n); });

  Mapping top(problems, "the top level");
  top.on("web", [&](const YAML::Node& n) { web_map.visit(n); })
      .on("paths", [&](const YAML::Node& n) { paths_map.visit(n); })
      .on("topology", [&](const YAML::Node& n) { topology_map.visit(n); })
      .on("log", [&](const YAML::Node& n) { log_map.visit(n); })
      .on("collectors", [&](const YAML::Node& n) { collectors_map.visit(n); });
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
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw ConfigError({path + ": cannot read the configuration file (" +
                       std::string(std::strerror(errno)) + ")"});
  }
  std::ostringstream text;
  text << in.rdbuf();
  return parse_config_text(text.str(), path);
}

std::string dump_config(const Config& config) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "web" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "listen_address" << YAML::Value << YAML::DoubleQuoted
      << config.web.listen_address;
  out << YAML::Key << "telemetry_path" << YAML::Value << config.web.telemetry_path;
  out << YAML::EndMap;
  out << YAML::Key << "paths" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "sysfs" << YAML::Value << config.paths.sysfs;
  out << YAML::Key << "procfs" << YAML::Value << config.paths.procfs;
  out << YAML::Key << "devfs" << YAML::Value << config.paths.devfs;
  out << YAML::EndMap;
  out << YAML::Key << "topology" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "source" << YAML::Value << config.topology.to_string();
  out << YAML::EndMap;
  out << YAML::Key << "log" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "level" << YAML::Value << std::string(to_string(config.log_level));
  out << YAML::EndMap;

  const auto& c = config.collectors;
  out << YAML::Key << "collectors" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "topology" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "enabled" << YAML::Value << c.topology.enabled;
  out << YAML::EndMap;
  out << YAML::Key << "papi" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "enabled" << YAML::Value << c.papi.enabled;
  out << YAML::Key << "cpus" << YAML::Value << YAML::DoubleQuoted << c.papi.cpus;
  out << YAML::Key << "granularity" << YAML::Value << to_string(c.papi.granularity);
  out << YAML::Key << "domain" << YAML::Value << to_string(c.papi.domain);
  out << YAML::Key << "attach" << YAML::Value << to_string(c.papi.attach);
  out << YAML::Key << "multiplex" << YAML::Value << c.papi.multiplex;
  if (c.papi.events_given) {
    out << YAML::Key << "events" << YAML::Value << YAML::BeginSeq;
    for (const auto& event : c.papi.events) {
      if (event.metric.empty() && event.help.empty()) {
        out << event.event;
        continue;
      }
      out << YAML::BeginMap << YAML::Key << "event" << YAML::Value << event.event;
      if (!event.metric.empty()) out << YAML::Key << "metric" << YAML::Value << event.metric;
      if (!event.help.empty()) out << YAML::Key << "help" << YAML::Value << event.help;
      out << YAML::EndMap;
    }
    out << YAML::EndSeq;
  }
  out << YAML::EndMap;
  out << YAML::Key << "rapl" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "enabled" << YAML::Value << c.rapl.enabled;
  out << YAML::Key << "interface" << YAML::Value << to_string(c.rapl.interface);
  if (!c.rapl.domains.empty()) {
    out << YAML::Key << "domains" << YAML::Value << YAML::Flow << c.rapl.domains;
  }
  out << YAML::Key << "max_power_watts" << YAML::Value << c.rapl.max_power_watts;
  out << YAML::Key << "wrap_guard_interval_seconds" << YAML::Value
      << c.rapl.wrap_guard_interval_seconds;
  out << YAML::EndMap;
  out << YAML::EndMap;
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace hwperf
