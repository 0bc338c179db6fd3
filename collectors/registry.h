// The collectors this exporter has: a list of the entries their folders export
// (collectors/collector_entry.h). The exporter walks this list and names no collector itself.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <prometheus/metric_family.h>

#include "collectors/collector_entry.h"
#include "collectors/collector_set.h"
#include "common/open_files.h"
#include "config/config.h"
#include "topology/topology.h"

namespace hwperf {

// Each collector folder exports its own entry (<folder>/<name>_registration.h); this is the list.
const std::vector<const CollectorEntry*>& collector_registry();

// What every enabled collector will hold open, for the startup check of the open-file limit.
std::vector<FileNeed> collector_file_needs(const Config& config, const Topology& topology);

// Throws ConfigError for a family name two enabled collectors would export, from the names their
// entries declare; nothing is built or opened. build_collectors and collector_check_report begin
// with it, and the config fuzzer runs it on every configuration that loads.
void check_family_names(const Config& config, const Topology& topology);

// Every enabled collector, in registry order. Throws ConfigError, before building any, for a
// family name two collectors would export (the entries' `families`), as collector_check_report
// does; then like the collectors' factories.
// Those named in `left_out` are not built (experiment mode without privileges).
CollectorSet build_collectors(const Config& config, const Topology& topology,
                              const std::vector<std::string>& left_out = {});

// The enabled collectors that count the whole machine (CollectorEntry::system_wide).
std::vector<std::string> system_wide_collectors(const Config& config);

// --check-config: what each enabled collector can do here, "<collector>: <line>", in registry
// order. Throws ConfigError first for a family name two collectors would export, with the message
// of build_collectors; then like the collectors' factories.
std::vector<std::string> collector_check_report(const Config& config, const Topology& topology);

// The event groups every enabled collector counts and where their families are, for
// --print-rules and experiment mode's summary (collector_entry.h rule_scopes).
std::vector<events::RuleScope> collector_rule_scopes(const Config& config);

// Experiment mode (-- CMD) through the collector that counts its commands
// (CollectorEntry::commands, the process targets): a target for each of `names`, counted from the
// command's exec (throws ConfigError for a name a configured target has); then, once each command
// is started, its pid and the region segment it inherits (-1: none); and what the summary explains,
// the events configured for the commands and whether only user mode is configured.
void add_experiment_commands(Config& config, const std::vector<std::string>& names);
void experiment_command_started(Config& config, const std::string& name, long pid, int regions_fd);
std::vector<EventSpec> experiment_events(const Config& config);
bool experiment_user_mode_only(const Config& config);

// "papi 7.0.0.0": every registered library and the version running, for --version.
std::vector<std::string> collector_library_versions();

// hwperf_build_info with the exporter's version and revision and every registered library's
// version (whether or not its collector is enabled).
prometheus::MetricFamily registry_build_info();

}  // namespace hwperf
