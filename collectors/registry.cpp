#include "collectors/registry.h"

#include <algorithm>
#include <stdexcept>

#include "collectors/build_info.h"
#include "collectors/cgroup/cgroup_registration.h"
#include "collectors/hwmon/hwmon_registration.h"
#include "collectors/papi/papi_presets.h"
#include "collectors/papi/papi_registration.h"
#include "collectors/process/process_registration.h"
#include "collectors/rapl/rapl_registration.h"
#include "collectors/topology/topology_registration.h"
#include "collectors/uncore/uncore_registration.h"
#include "config/errors.h"

namespace hwperf {
namespace {

const CollectorServices& services() {
  static const CollectorServices shared{papi::preset_catalog()};
  return shared;
}

}  // namespace

// Family names across collectors, from what each enabled entry declares before anything is built:
// the start (build_collectors) and the dry run (collector_check_report) both begin here, so they
// refuse the same names with the same message, and neither opens a counter for a configuration
// refused for its names.
void check_family_names(const Config& config, const Topology& topology) {
  FamilyOwners owners;
  std::vector<std::string> problems;
  for (const CollectorEntry* entry : collector_registry()) {
    if (!entry->enabled(config) || entry->families == nullptr) continue;
    for (auto& problem : owners.claim(entry->name, entry->families(config, topology))) {
      problems.push_back(std::move(problem));
    }
  }
  if (!problems.empty()) throw ConfigError(std::move(problems));
}

namespace {

// The entry of the collector that counts experiment mode's commands.
const CommandCounting& command_counting() {
  for (const CollectorEntry* entry : collector_registry()) {
    if (entry->commands != nullptr) return *entry->commands;
  }
  throw std::logic_error("no registered collector counts experiment mode's commands");
}

}  // namespace

void add_experiment_commands(Config& config, const std::vector<std::string>& names) {
  command_counting().add(config, names);
}

void experiment_command_started(Config& config, const std::string& name, long pid, int regions_fd) {
  command_counting().started(config, name, pid, regions_fd);
}

std::vector<EventSpec> experiment_events(const Config& config) {
  return command_counting().events(config);
}

bool experiment_user_mode_only(const Config& config) {
  return command_counting().user_mode_only(config);
}

const std::vector<const CollectorEntry*>& collector_registry() {
  // Registry order is scrape order, and the order in which family names are claimed: the
  // topology's families first.
  static const std::vector<CollectorEntry> entries = {
      topology_collector_entry(), papi_collector_entry(),   rapl_collector_entry(),
      process_collector_entry(),  cgroup_collector_entry(), uncore_collector_entry(),
      hwmon_collector_entry(),
  };
  static const std::vector<const CollectorEntry*> listed = [] {
    std::vector<const CollectorEntry*> pointers;
    for (const CollectorEntry& entry : entries) pointers.push_back(&entry);
    return pointers;
  }();
  return listed;
}

std::vector<FileNeed> collector_file_needs(const Config& config, const Topology& topology) {
  std::vector<FileNeed> needs;
  for (const CollectorEntry* entry : collector_registry()) {
    if (entry->enabled(config) && entry->files != nullptr) {
      needs.push_back(entry->files(config, topology));
    }
  }
  return needs;
}

CollectorSet build_collectors(const Config& config, const Topology& topology,
                              const std::vector<std::string>& left_out) {
  check_family_names(config, topology);
  CollectorSet set;
  for (const CollectorEntry* entry : collector_registry()) {
    if (!entry->enabled(config)) continue;
    if (std::find(left_out.begin(), left_out.end(), entry->name) != left_out.end()) continue;
    set.add(entry->make(config, topology, services()));
  }
  return set;
}

std::vector<std::string> system_wide_collectors(const Config& config) {
  std::vector<std::string> names;
  for (const CollectorEntry* entry : collector_registry()) {
    if (entry->system_wide && entry->enabled(config)) names.push_back(entry->name);
  }
  return names;
}

std::vector<std::string> collector_check_report(const Config& config, const Topology& topology) {
  check_family_names(config, topology);
  std::vector<std::string> lines;
  for (const CollectorEntry* entry : collector_registry()) {
    if (!entry->enabled(config)) continue;
    for (const auto& line : entry->check(config, topology, services())) {
      lines.push_back(std::string(entry->name) + ": " + line);
    }
  }
  return lines;
}

std::vector<events::RuleScope> collector_rule_scopes(const Config& config) {
  std::vector<events::RuleScope> scopes;
  for (const CollectorEntry* entry : collector_registry()) {
    if (!entry->enabled(config) || entry->rule_scopes == nullptr) continue;
    for (auto& scope : entry->rule_scopes(config)) scopes.push_back(std::move(scope));
  }
  return scopes;
}

std::vector<std::string> collector_library_versions() {
  std::vector<std::string> versions;
  for (const CollectorEntry* entry : collector_registry()) {
    if (entry->library_label == nullptr) continue;
    std::string library = entry->library_label;
    library = library.substr(0, library.find("_version"));
    versions.push_back(library + " " + entry->library_version());
  }
  return versions;
}

prometheus::MetricFamily registry_build_info() {
  std::vector<std::pair<std::string, std::string>> libraries;
  for (const CollectorEntry* entry : collector_registry()) {
    if (entry->library_label != nullptr) {
      libraries.emplace_back(entry->library_label, entry->library_version());
    }
  }
  return build_info_family(libraries);
}

}  // namespace hwperf
