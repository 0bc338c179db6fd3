// The collectors: section of the schema: how each collector's keys are read, checked and dumped.
#include <functional>
#include <regex>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/cpu_list.h"
#include "common/text.h"
#include "config/schema_keys.h"

namespace hwperf::config_schema {
namespace {

using namespace yaml_reader;

// libpfm4 event names are a few dozen characters; PAPI copies names into fixed buffers (an
// 8 KiB name overflows one inside libpapi 7.0), so nothing longer reaches it.
constexpr std::size_t kMaxEventNameLength = 1024;

}  // namespace

bool valid_metric_base(const std::string& name) {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = (c >= 'a' && c <= 'z') || c == '_' || (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

bool read_event_item(Problems& problems, const YAML::Node& item, const std::string& item_path,
                     PapiEventConfig& event) {
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
    return false;
  }
  if (item.IsScalar() && event.event.empty()) {
    problems.add(item.Mark(), item_path +
                                  ": an empty event name; name an event (papi_avail and "
                                  "papi_native_avail list those of this machine)");
    return false;
  }
  if (const auto control = control_character(event.event)) {
    problems.add(item.Mark(), item_path + ": the event name holds a control character (" +
                                  *control + "); an event name is one line of printable text");
    return false;
  }
  if (event.event.size() > kMaxEventNameLength) {
    problems.add(item.Mark(), item_path + ": an event name of " +
                                  std::to_string(event.event.size()) +
                                  " characters; PAPI event "
                                  "names are at most " +
                                  std::to_string(kMaxEventNameLength));
    return false;
  }
  if (!event.metric.empty() && !valid_metric_base(event.metric)) {
    problems.add(item.Mark(), item_path + ".metric: \"" + event.metric +
                                  "\" is not a valid metric name part (use [a-z_][a-z0-9_]*)");
  }
  return !event.event.empty();
}

namespace {

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
    PapiEventConfig event;
    if (read_event_item(problems, item, path + "[" + std::to_string(index++) + "]", event)) {
      events.push_back(std::move(event));
    }
  }
}

void read_cpus(Problems& problems, const YAML::Node& node, CpuSelection& out) {
  const std::string path = "collectors.papi.cpus";
  const std::string expected = "\"all\" or a CPU list such as \"0-3,8\"";
  const auto text = marked_scalar(problems, node, path, expected, out.mark);
  if (!text) return;
  try {
    out.cpus = *text == "all" ? std::vector<unsigned>{} : parse_cpu_list(*text);
    out.all = *text == "all";
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

// Whether `text` compiles as the ECMAScript regular expression the collectors will use; when it
// does not, a problem at `node` says why.
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

// A list of strings: each item is read as a non-empty string and handed to `each` with its node;
// anything but a list is one problem saying what the list holds.
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

// collectors.cgroup.roots: paths below the cgroup mount, kept without their slashes; a path that
// climbs out of the hierarchy is refused.
void read_cgroup_roots(Problems& problems, const YAML::Node& node, std::vector<CgroupRoot>& roots) {
  const std::string path = "collectors.cgroup.roots";
  roots.clear();
  read_string_list(
      problems, node, path, "cgroup paths", [&](std::string text, const YAML::Node& item) {
        while (!text.empty() && text.front() == '/') text.erase(0, 1);
        while (!text.empty() && text.back() == '/') text.pop_back();
        if (text == ".." || text.rfind("../", 0) == 0 || text.find("/../") != std::string::npos ||
            (text.size() >= 3 && text.compare(text.size() - 3, 3, "/..") == 0)) {
          problems.add(item.Mark(), path + ": \"" + text + "\" leaves the hierarchy");
          return;
        }
        roots.push_back({text, problems.where(item.Mark())});
      });
}

// collectors.cgroup.match: regular expressions, each checked here so that a typo fails startup.
void read_cgroup_match(Problems& problems, const YAML::Node& node,
                       std::vector<CgroupPattern>& match) {
  const std::string path = "collectors.cgroup.match";
  match.clear();
  read_string_list(problems, node, path, "regular expressions",
                   [&](std::string text, const YAML::Node& item) {
                     if (text.empty() || !check_regex(problems, item, path, text)) return;
                     match.push_back({text, problems.where(item.Mark())});
                   });
}

// collectors.process.targets: a list of {name, and one of pid, pidfile, match}.
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

// An `events:` list of a counting collector (papi, process, cgroup); dumped only when the user
// gave one, so that the default set stays the code's.
Key event_list_key(Problems& problems, const std::string& path,
                   std::vector<PapiEventConfig>& events, bool& events_given) {
  return {"events",
          [&problems, path, &events, &events_given](const YAML::Node& n) {
            read_event_list(problems, n, path, events, events_given);
          },
          [&events](YAML::Emitter& out) { dump_events(out, events); },
          [&events_given] { return events_given; }};
}

// ---- collectors.hwmon (collectors/hwmon): its keys, read and dumped -----------------------------
Key hwmon_section(Problems& problems, HwmonCollectorConfig& hwmon) {
  return section(
      problems, "hwmon", "collectors.hwmon",
      {bool_key(problems, "enabled", "collectors.hwmon.enabled", hwmon.enabled),
       between_key(problems, "interval_seconds", "collectors.hwmon.interval_seconds",
                   hwmon.interval_seconds, kMinHwmonIntervalSeconds, kMaxHwmonIntervalSeconds,
                   "seconds"),
       zero_or_between_key(problems, "stale_after_seconds", "collectors.hwmon.stale_after_seconds",
                           hwmon.stale_after_seconds, kMinHwmonStaleAfterSeconds,
                           kMaxHwmonStaleAfterSeconds, "never", "seconds")});
}
// ---- end of collectors.hwmon --------------------------------------------------------------------

}  // namespace

Key collectors_section(Problems& problems, CollectorsConfig& collectors) {
  auto& papi = collectors.papi;
  auto& rapl = collectors.rapl;
  auto& process = collectors.process;
  auto& cgroup = collectors.cgroup;
  return section(
      problems, "collectors", "collectors",
      {section(problems, "topology", "collectors.topology",
               {bool_key(problems, "enabled", "collectors.topology.enabled",
                         collectors.topology.enabled)}),
       section(
           problems, "papi", "collectors.papi",
           {bool_key(problems, "enabled", "collectors.papi.enabled", papi.enabled),
            {"cpus", [&problems, &papi](const YAML::Node& n) { read_cpus(problems, n, papi.cpus); },
             [&papi](YAML::Emitter& out) { out << YAML::DoubleQuoted << papi.cpus.to_string(); }},
            enum_key(problems, "granularity", "collectors.papi.granularity", papi.granularity,
                     kGranularityNames),
            enum_key(problems, "domain", "collectors.papi.domain", papi.domain,
                     kCountingDomainNames),
            enum_key(problems, "attach", "collectors.papi.attach", papi.attach,
                     kPapiAttachModeNames),
            bool_key(problems, "multiplex", "collectors.papi.multiplex", papi.multiplex),
            event_list_key(problems, "collectors.papi.events", papi.events, papi.events_given),
            group_list_key(problems, "collectors.papi.groups", papi.groups, papi.groups_given)}),

       section(problems, "rapl", "collectors.rapl",
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
                event_list_key(problems, "collectors.process.events", process.events,
                               process.events_given),
                group_list_key(problems, "collectors.process.groups", process.groups,
                               process.groups_given),
                enum_key(problems, "domain", "collectors.process.domain", process.domain,
                         kCountingDomainNames),
                bool_key(problems, "per_cpu", "collectors.process.per_cpu", process.per_cpu),
                bool_key(problems, "regions", "collectors.process.regions", process.regions),
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
       section(
           problems, "cgroup", "collectors.cgroup",
           {bool_key(problems, "enabled", "collectors.cgroup.enabled", cgroup.enabled),
            event_list_key(problems, "collectors.cgroup.events", cgroup.events,
                           cgroup.events_given),
            group_list_key(problems, "collectors.cgroup.groups", cgroup.groups,
                           cgroup.groups_given),
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
               read_cgroup_roots(problems, n, cgroup.roots);
             },
             [&cgroup](YAML::Emitter& out) {
               out << YAML::Flow << YAML::BeginSeq;
               for (const auto& root : cgroup.roots) out << "/" + root.path;
               out << YAML::EndSeq;
             },
             [&cgroup] { return !cgroup.roots.empty(); }},
            {"match",
             [&problems, &cgroup](const YAML::Node& n) {
               read_cgroup_match(problems, n, cgroup.match);
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
                 problems.add(problems.at(n), path + ": expected a whole number from 1 to 65536");
                 return;
               }
               cgroup.max_cgroups = static_cast<unsigned>(value);
             },
             dump_value(cgroup.max_cgroups)},
            between_key(problems, "rescan_interval_seconds",
                        "collectors.cgroup.rescan_interval_seconds", cgroup.rescan_interval_seconds,
                        kMinRescanIntervalSeconds, kMaxRescanIntervalSeconds, "seconds"),
            enum_key(problems, "runtime", "collectors.cgroup.runtime", cgroup.runtime,
                     kContainerRuntimeNames)}),
       section(
           problems, "uncore", "collectors.uncore",
           {bool_key(problems, "enabled", "collectors.uncore.enabled", collectors.uncore.enabled),
            zero_or_between_key(problems, "peak_memory_bytes_per_second",
                                "collectors.uncore.peak_memory_bytes_per_second",
                                collectors.uncore.peak_memory_bytes_per_second,
                                kMinPeakMemoryBytesPerSecond, kMaxPeakMemoryBytesPerSecond,
                                "not exported", "bytes per second")}),
       hwmon_section(problems, collectors.hwmon)});
}

}  // namespace hwperf::config_schema
