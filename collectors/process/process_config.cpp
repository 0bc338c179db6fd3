#include "collectors/process/process_config.h"

#include <set>
#include <utility>

#include "collectors/events/counting_section.h"
#include "common/text.h"
#include "config/errors.h"
#include "config/schema_keys.h"

namespace hwperf {
namespace {

using namespace yaml_reader;
using namespace config_schema;

void read_target_pid(Problems& problems, const YAML::Node& value, const std::string& item_path,
                     ProcessTargetConfig& target) {
  target.selector = ProcessTargetConfig::Selector::pid;
  std::string pid_text;
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
}

void read_target_match(Problems& problems, const YAML::Node& value, const std::string& item_path,
                       ProcessTargetConfig& target) {
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
      check_regex(problems, regex_node, key_path, *out);
    });
  }
  if (!value.IsMap()) {
    problems.add(problems.at(value),
                 match_path + ": expected a mapping of comm, exe and/or cmdline");
    return;
  }
  mapping.visit(value);
  if (target.comm.empty() && target.exe.empty() && target.cmdline.empty()) {
    problems.add(problems.at(value), match_path + ": give at least one of comm, exe, cmdline");
  }
}

// One item of collectors.process.targets: false when it cannot be a target.
bool read_target(Problems& problems, const YAML::Node& item, const std::string& item_path,
                 std::set<std::string>& names, ProcessTargetConfig& target) {
  if (!item.IsMap()) {
    problems.add(item.Mark(), item_path + ": expected {name, pid | pidfile | match}");
    return false;
  }
  target.mark = problems.where(item.Mark());
  int selectors = 0;
  Mapping(problems, item_path)
      .on("name", read_nonempty_string(problems, item_path + ".name", target.name))
      .on("pid",
          [&](const YAML::Node& value) {
            ++selectors;
            read_target_pid(problems, value, item_path, target);
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
            read_target_match(problems, value, item_path, target);
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
    return false;
  }
  return true;
}

// collectors.process.targets: a list of {name, and one of pid, pidfile, match}.
void read_process_targets(Problems& problems, const YAML::Node& node,
                          std::vector<ProcessTargetConfig>& targets) {
  const std::string path = "collectors.process.targets";
  targets.clear();
  if (!node.IsSequence()) {
    problems.add(problems.at(node), path + ": expected a list of {name, pid | pidfile | match}");
    return;
  }
  std::set<std::string> names;
  std::size_t index = 0;
  for (const auto& item : node) {
    ProcessTargetConfig target;
    const std::string item_path = path + "[" + std::to_string(index++) + "]";
    if (read_target(problems, item, item_path, names, target)) targets.push_back(std::move(target));
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

}  // namespace

Key process_settings_keys(Problems& problems, Config& config) {
  auto& process = config.get<ProcessCollectorConfig>();
  return events::counting_section(
      problems, "process", process,
      {enum_key(problems, "domain", "collectors.process.domain", process.domain,
                kCountingDomainNames),
       bool_key(problems, "per_cpu", "collectors.process.per_cpu", process.per_cpu),
       bool_key(problems, "regions", "collectors.process.regions", process.regions),
       rescan_interval_key(problems, "collectors.process.rescan_interval_seconds",
                           process.rescan_interval_seconds),
       {"targets",
        [&problems, &process](const YAML::Node& n) {
          read_process_targets(problems, n, process.targets);
        },
        [&process](YAML::Emitter& out) { dump_process_targets(out, process.targets); },
        [&process] { return !process.targets.empty(); }}});
}

void add_command_targets(Config& config, const std::vector<std::string>& names) {
  auto& process = config.get<ProcessCollectorConfig>();
  process.enabled = true;
  auto& targets = process.targets;
  const std::size_t configured = targets.size();
  for (const auto& name : names) {
    ProcessTargetConfig target;
    target.selector = ProcessTargetConfig::Selector::command;
    target.name = name;
    for (std::size_t i = 0; i < configured; ++i) {
      if (targets[i].name != target.name) continue;
      throw ConfigError({targets[i].mark.to_string() + ": collectors.process.targets: " +
                         target.name + " is the name experiment mode gives the command; name " +
                         "the command otherwise with --experiment.name"});
    }
    targets.push_back(target);
  }
}

void command_target_started(Config& config, const std::string& name, long pid, int regions_fd) {
  for (auto& target : config.get<ProcessCollectorConfig>().targets) {
    if (target.selector != ProcessTargetConfig::Selector::command || target.name != name) continue;
    target.pid = pid;
    target.regions_fd = regions_fd;
  }
}

}  // namespace hwperf
