#include "config/config_values.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <regex>
#include <set>
#include <stdexcept>
#include <utility>

#include "common/cpu_list.h"
#include "common/enum_names.h"
#include "common/files.h"
#include "common/text.h"
#include "config/errors.h"

namespace hwperf::config_values {
namespace {

using namespace yaml_reader;

// libpfm4 event names are a few dozen characters; PAPI copies names into fixed buffers (an
// 8 KiB name overflows one inside libpapi 7.0), so nothing longer reaches it.
constexpr std::size_t kMaxEventNameLength = 1024;
// Machines have at most a few thousand CPUs (Linux NR_CPUS is 8192 at most); a synthetic
// description of more is a typo that would make hwloc build millions of objects.
constexpr std::uint64_t kMaxSyntheticCpus = 65536;

}  // namespace

using namespace yaml_reader;

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
    if (synthetic_cpu_count(out.argument) > kMaxSyntheticCpus) {
      problems.add(problems.at(node), path + ": the synthetic description stands for more than " +
                                          std::to_string(kMaxSyntheticCpus) + " CPUs");
    }
  } else {
    problems.add(problems.at(node), path + ": expected " + expected + ", got \"" + text + "\"");
  }
}

void read_event_list(Problems& problems, const YAML::Node& node, const std::string& path,
                     std::vector<PapiEventConfig>& events, bool& events_given) {
  events_given = true;
  events.clear();
  if (!node.IsSequence()) {
    problems.add(problems.at(node),
                 path + ": expected a list of event names or {event, metric, help}");
    return;
  }
  if (node.size() == 0) {
    problems.add(problems.at(node), path +
                                        ": the list is empty; name at least one event, or remove "
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
    if (event.event.size() > kMaxEventNameLength) {
      problems.add(item.Mark(), item_path + ": an event name of " +
                                    std::to_string(event.event.size()) +
                                    " characters; PAPI event "
                                    "names are at most " +
                                    std::to_string(kMaxEventNameLength));
      continue;
    }
    if (!event.metric.empty() && !valid_metric_base(event.metric)) {
      problems.add(item.Mark(), item_path + ".metric: \"" + event.metric +
                                    "\" is not a valid metric name part (use [a-z_][a-z0-9_]*)");
    }
    if (!event.event.empty()) events.push_back(std::move(event));
  }
}

void read_cpus(Problems& problems, const YAML::Node& node, CpuSelection& out) {
  const std::string path = "collectors.papi.cpus";
  const std::string expected = "\"all\" or a CPU list such as \"0-3,8\"";
  if (!is_scalar(problems, node, path, expected)) return;
  const auto text = node.as<std::string>();
  out.mark = problems.where(node.Mark());
  if (text == "all") {
    out.all = true;
    out.cpus.clear();
    return;
  }
  try {
    out.cpus = parse_cpu_list(text);
    out.all = false;
  } catch (const std::invalid_argument& e) {
    problems.add(problems.at(node), path + ": expected " + expected + ": " + e.what());
  }
}

void read_rapl_domains(Problems& problems, const YAML::Node& node, RaplCollectorConfig& out) {
  const std::string path = "collectors.rapl.domains";
  const std::string expected = "a list of " + join_names(kRaplDomainNames);
  if (!node.IsSequence()) {
    problems.add(problems.at(node), path + ": expected " + expected);
    return;
  }
  out.domains.clear();
  for (const auto& item : node) {
    if (!is_scalar(problems, item, path, expected)) continue;
    const auto name = item.as<std::string>();
    const auto domain = parse_name(kRaplDomainNames, name);
    if (!domain) {
      problems.add(item.Mark(), path + ": unknown domain \"" + name + "\" (expected one of " +
                                    join_names(kRaplDomainNames) + ")");
      continue;
    }
    out.domains.push_back(*domain);
  }
}

void read_process_targets(Problems& problems, const YAML::Node& node,
                          std::vector<ProcessTargetConfig>& targets) {
  const std::string path = "collectors.process.targets";
  const std::string expected = "a list of {name, pid | pidfile | match}";
  targets.clear();
  if (!node.IsSequence()) {
    problems.add(problems.at(node), path + ": expected " + expected);
    return;
  }
  std::set<std::string> names;
  std::size_t index = 0;
  for (const auto& item : node) {
    const std::string item_path = path + "[" + std::to_string(index++) + "]";
    if (!item.IsMap()) {
      problems.add(item.Mark(), item_path + ": expected {name, pid | pidfile | match}");
      continue;
    }
    ProcessTargetConfig target;
    target.mark = problems.where(item.Mark());
    std::string pid_text;
    int selectors = 0;
    Mapping(problems, item_path)
        .on("name", read_nonempty_string(problems, item_path + ".name", target.name))
        .on("pid",
            [&](const YAML::Node& value) {
              ++selectors;
              target.selector = ProcessTargetConfig::Selector::pid;
              read_nonempty_string(problems, item_path + ".pid", pid_text)(value);
              const auto pid = parse_u64(pid_text);
              if (!pid_text.empty() && (!pid || *pid == 0 || *pid > 4194304)) {
                problems.add(problems.at(value), item_path +
                                                     ".pid: expected a process id (1 to "
                                                     "4194304, Linux's pid_max), got \"" +
                                                     pid_text + "\"");
              } else if (pid) {
                target.pid = static_cast<long>(*pid);
              }
            })
        .on("pidfile",
            [&](const YAML::Node& value) {
              ++selectors;
              target.selector = ProcessTargetConfig::Selector::pidfile;
              read_nonempty_string(problems, item_path + ".pidfile", target.pidfile)(value);
            })
        .on("match",
            [&](const YAML::Node& value) {
              ++selectors;
              target.selector = ProcessTargetConfig::Selector::match;
              const std::string match_path = item_path + ".match";
              std::vector<std::pair<const char*, std::string*>> fields = {
                  {"comm", &target.comm}, {"exe", &target.exe}, {"cmdline", &target.cmdline}};
              Mapping mapping(problems, match_path);
              for (auto& [key, text] : fields) {
                std::string* out = text;
                const std::string key_path = match_path + "." + key;
                mapping.on(key, [&problems, key_path, out](const YAML::Node& regex_node) {
                  read_nonempty_string(problems, key_path, *out)(regex_node);
                  try {
                    std::regex compiled(*out, std::regex::ECMAScript);
                  } catch (const std::regex_error& e) {
                    problems.add(problems.at(regex_node), key_path + ": \"" + *out +
                                                              "\" is not a regular expression (" +
                                                              e.what() + ")");
                  }
                });
              }
              if (!value.IsMap()) {
                problems.add(problems.at(value),
                             match_path + ": expected a mapping of comm, exe and/or cmdline");
                return;
              }
              mapping.visit(value);
              if (target.comm.empty() && target.exe.empty() && target.cmdline.empty()) {
                problems.add(problems.at(value),
                             match_path + ": give at least one of comm, exe, cmdline");
              }
            })
        .visit(item);
    if (!item["name"].IsDefined()) {
      problems.add(item.Mark(), item_path + ": missing required key \"name\"");
    } else if (!target.name.empty() && !names.insert(target.name).second) {
      problems.add(item.Mark(),
                   item_path + ".name: \"" + target.name + "\" names an earlier target too");
    }
    if (selectors != 1) {
      problems.add(item.Mark(), item_path + ": give exactly one of pid, pidfile, match (" +
                                    std::to_string(selectors) + " given)");
      continue;
    }
    targets.push_back(std::move(target));
  }
}

void dump_process_targets(YAML::Emitter& out, const std::vector<ProcessTargetConfig>& targets) {
  out << YAML::BeginSeq;
  for (const auto& target : targets) {
    out << YAML::BeginMap << YAML::Key << "name" << YAML::Value << target.name;
    switch (target.selector) {
      case ProcessTargetConfig::Selector::pid:
      case ProcessTargetConfig::Selector::command:
        out << YAML::Key << "pid" << YAML::Value << target.pid;
        break;
      case ProcessTargetConfig::Selector::pidfile:
        out << YAML::Key << "pidfile" << YAML::Value << target.pidfile;
        break;
      case ProcessTargetConfig::Selector::match:
        out << YAML::Key << "match" << YAML::Value << YAML::BeginMap;
        if (!target.comm.empty()) out << YAML::Key << "comm" << YAML::Value << target.comm;
        if (!target.exe.empty()) out << YAML::Key << "exe" << YAML::Value << target.exe;
        if (!target.cmdline.empty()) out << YAML::Key << "cmdline" << YAML::Value << target.cmdline;
        out << YAML::EndMap;
        break;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
}

void dump_events(YAML::Emitter& out, const std::vector<PapiEventConfig>& events) {
  out << YAML::BeginSeq;
  for (const auto& event : events) {
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

}  // namespace hwperf::config_values
