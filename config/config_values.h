// The readers and writers of the configuration's compound values (a topology source, event
// lists, CPU lists, RAPL domains, process targets): each reports every problem with its
// file:line:column. loader.cpp's schema says which key each one reads. Internal to config/.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "config/config.h"
#include "config/yaml_reader.h"

namespace hwperf::config_values {

using yaml_reader::Problems;

// The number of PUs a synthetic description ("pack:2 core:4 pu:2", levels may carry
// "(attributes)") stands for: the product of the level counts; 0 when it cannot be read.
std::uint64_t synthetic_cpu_count(const std::string& description);
bool valid_metric_base(const std::string& name);

void read_topology_source(Problems& problems, const YAML::Node& node, TopologyConfig& out);
// A collector's `events:` list at `path`.
void read_event_list(Problems& problems, const YAML::Node& node, const std::string& path,
                     std::vector<PapiEventConfig>& events, bool& events_given);
void read_cpus(Problems& problems, const YAML::Node& node, CpuSelection& out);
void read_rapl_domains(Problems& problems, const YAML::Node& node, RaplCollectorConfig& out);
// collectors.process.targets: a list of {name, and one of pid, pidfile, match}.
void read_process_targets(Problems& problems, const YAML::Node& node,
                          std::vector<ProcessTargetConfig>& targets);

void dump_process_targets(YAML::Emitter& out, const std::vector<ProcessTargetConfig>& targets);
void dump_events(YAML::Emitter& out, const std::vector<PapiEventConfig>& events);

}  // namespace hwperf::config_values
