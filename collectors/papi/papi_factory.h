// The real PAPI collector and its --check-config report: PAPI opened on this machine, behind the
// collector of papi_collector.h.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "collectors/collector.h"
#include "collectors/events/groups.h"
#include "common/open_files.h"
#include "collectors/papi/papi_config.h"

namespace hwperf {

class Topology;

namespace papi {

// Used when the config lists no events. Best effort: what this machine cannot count is skipped.
std::vector<EventSpec> default_events();
// The groups counted when the config lists neither events nor groups, best effort like the
// default events (events/groups.h); the default events are then those no default group counts.
std::vector<std::string> default_group_names();
// What the collector counts: the events listed, or with neither events nor groups listed the
// default events and groups (best effort); with groups listed but no events, no ungrouped
// events, and with events listed but no groups, no groups.
std::vector<EventSpec> ungrouped_events(const PapiCollectorConfig& config);
std::vector<events::GroupDefinition> configured_groups(const PapiCollectorConfig& config,
                                                       const std::vector<GroupConfig>& user);

// config.cpus against the topology: "all" is every CPU in it. Throws ConfigError naming
// where the list was written for CPUs the topology does not have (offline or absent).
std::vector<unsigned> select_cpus(const PapiCollectorConfig& config, const Topology& topology);

// Descriptors one CPU's events take: one per native event each is counted through, so a derived
// preset (PAPI_FP_OPS as three native events) counts each of its terms. `native_terms` says how
// many an event has here (at least 1 is assumed).
std::size_t descriptors_per_cpu(const std::vector<std::string>& events,
                                const std::function<unsigned(const std::string&)>& native_terms);

}  // namespace papi

// The real collector: counts config.events and config.groups (`user_groups`: the top-level
// `groups:`, which config.groups may name), each group one kernel group per CPU
// (papi_group_source.h). Validates config.events / config.cpus (ConfigError, exit 2, for unknown
// events, bad CPU lists, CPUs not in the topology, invalid or clashing metric names), initialises
// PAPI for threads, opens and starts every counter, and logs once each (event, CPUs) it had to
// drop and why. Throws std::runtime_error with the remedy when PAPI cannot initialise or when
// none of the events the user named can be counted anywhere. Remedies name files under `paths`
// (--path.procfs for kernel.perf_event_paranoid, --path.sysfs).
std::unique_ptr<Collector> make_papi_collector(const PapiCollectorConfig& config,
                                               const Topology& topology,
                                               const PathsConfig& paths = PathsConfig{},
                                               const std::vector<GroupConfig>& user_groups = {});

// For --check-config: one line per event saying whether PAPI can count it here, on which CPUs,
// under which metric name (and, for a preset counted through the kernel's generic event, through
// which), and why not; then every built-in group, counted or not, and the user's groups counted,
// "group NAME: countable (EVENTS)" or "group NAME: NOT countable: MEMBER (EVENT: REASON)".
// With the default events and PAPI unavailable, one line saying why. Opens
// the counters for real (then closes them), so the answer is the one the exporter would get. Throws
// ConfigError like make_papi_collector().
std::vector<std::string> papi_check_report(const PapiCollectorConfig& config,
                                           const Topology& topology,
                                           const PathsConfig& paths = PathsConfig{},
                                           const std::vector<GroupConfig>& user_groups = {});

// The descriptors the collector will hold open: one per CPU and native event counted, so a
// derived preset counts once per term PAPI defines it by here. Where PAPI cannot start, one per
// event (the collector then opens nothing anyway).
FileNeed papi_file_need(const PapiCollectorConfig& config, const Topology& topology,
                        const PathsConfig& paths = PathsConfig{},
                        const std::vector<GroupConfig>& user_groups = {});

}  // namespace hwperf
