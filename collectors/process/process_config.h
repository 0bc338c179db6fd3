// The process targets' settings (collectors.process) and their keys in the configuration file.
#pragma once

#include <string>
#include <vector>

#include "collectors/events/specs.h"
#include "common/source_mark.h"
#include "config/config.h"
#include "config/settings_keys.h"

namespace hwperf {

// One process target: a name (its `target` label) and exactly one way of finding its processes.
struct ProcessTargetConfig {
  enum class Selector { pid, pidfile, match, command };
  std::string name;
  Selector selector = Selector::pid;
  long pid = 0;         // Selector::pid, and Selector::command once started
  std::string pidfile;  // Selector::pidfile: read again whenever its process is gone
  // Selector::match: regular expressions (ECMAScript, searched anywhere in the text) on
  // /proc/PID/comm, the executable's path and the command line (arguments joined by spaces);
  // every one given must match. "" = not given.
  std::string comm;
  std::string exe;
  std::string cmdline;
  SourceMark mark;
  // Selector::command with --experiment.regions: the region segment (a sealed memfd) the
  // exporter created and passed to the command; the process collector writes its event table
  // and reads it. -1: none (segments are looked for under procfs when regions is on).
  int regions_fd = -1;
};

struct ProcessCollectorConfig {
  bool enabled = true;  // and only built when there are targets
  // The same vocabulary as the PAPI collector. Empty = the default set, best effort.
  std::vector<EventSpec> events;
  bool events_given = false;
  std::vector<GroupRef> groups;  // each one kernel group per thread (and CPU with per_cpu)
  bool groups_given = false;
  CountingDomain domain = CountingDomain::all;
  // Each thread counted on each CPU, so counts carry the CPU's topology labels.
  bool per_cpu = false;
  // Each counted process's region segment (the marker library's) is looked for and exported.
  bool regions = false;
  double rescan_interval_seconds = 3;
  std::vector<ProcessTargetConfig> targets;
};

// collectors.process, bound to config.get<ProcessCollectorConfig>().
config_schema::Key process_settings_keys(yaml_reader::Problems& problems, Config& config);

// Experiment mode's commands as process targets (CollectorEntry::commands): a target per name,
// counted from the command's exec (the collector is enabled for them); throws ConfigError naming
// a configured target that has one of the names.
void add_command_targets(Config& config, const std::vector<std::string>& names);
// The command of target `name` was started as `pid`, inheriting the region segment `regions_fd`.
void command_target_started(Config& config, const std::string& name, long pid, int regions_fd);

}  // namespace hwperf
