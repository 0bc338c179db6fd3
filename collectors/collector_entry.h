// What the exporter needs to know of one collector, exported by the collector's own folder
// (node_exporter's registerCollector, written as a value: a static library would drop a
// self-registering object file nothing refers to). collectors/registry.cpp lists the entries.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/collector.h"
#include "collectors/events/groups.h"
#include "collectors/events/presets.h"
#include "collectors/events/rules.h"
#include "collectors/events/specs.h"
#include "common/open_files.h"
#include "config/config.h"
#include "config/settings_keys.h"
#include "topology/topology.h"

namespace hwperf {

// What one collector's folder offers the others, handed to every collector by the registry, so
// that no collector includes another's folder: PAPI's definitions of its presets, for the
// collectors that count with the perf interface directly.
struct CollectorServices {
  const events::PresetCatalog& presets;
};

// What experiment mode (-- CMD) asks of the collector that counts its commands (the process
// targets' entry has it): the exporter reaches it through the registry (registry.h), naming no
// collector, and no collector's settings.
struct CommandCounting {
  // Adds a target named after each of `names`, each counting one command from its exec; throws
  // ConfigError when a configured target has one of the names.
  void (*add)(Config& config, const std::vector<std::string>& names);
  // The command counted as target `name` was started as `pid`; `regions_fd` is the region segment
  // it inherits (-1: none).
  void (*started)(Config& config, const std::string& name, long pid, int regions_fd);
  // What experiment mode's summary explains: the events configured for the commands, and whether
  // only user mode is configured.
  std::vector<EventSpec> (*events)(const Config& config);
  bool (*user_mode_only)(const Config& config);
};

// An entry is built from what every collector has (its name, settings, when it is enabled, how
// it is built and checked), then states by name whatever else it has, the rest left empty:
//   CollectorEntry("rapl", &rapl_settings_keys, &rapl_enabled, &rapl_make, &rapl_check)
//       .with_files(&rapl_files)
//       .counts_system_wide();
// (the named parameter idiom: C++17 has no designated initialisers, and a positional list of
// eleven fields, most of them null, says nothing of which is which).
struct CollectorEntry {
  using Enabled = bool (*)(const Config& config);
  using Make = std::unique_ptr<Collector> (*)(const Config& config, const Topology& topology,
                                              const CollectorServices& services);
  using Check = std::vector<std::string> (*)(const Config& config, const Topology& topology,
                                             const CollectorServices& services);
  using Files = FileNeed (*)(const Config& config, const Topology& topology);
  using LibraryVersion = std::string (*)();
  using RuleScopes = std::vector<events::RuleScope> (*)(const Config& config);
  using Families = std::vector<FamilyDeclaration> (*)(const Config& config,
                                                      const Topology& topology);

  CollectorEntry(const char* collector, SettingsKeys keys, Enabled is_enabled, Make builder,
                 Check checker)
      : name(collector), settings(keys), enabled(is_enabled), make(builder), check(checker) {}

  CollectorEntry& with_files(Files need) {
    files = need;
    return *this;
  }
  CollectorEntry& with_library(const char* label, LibraryVersion version) {
    library_label = label;
    library_version = version;
    return *this;
  }
  CollectorEntry& with_rule_scopes(RuleScopes scopes) {
    rule_scopes = scopes;
    return *this;
  }
  CollectorEntry& with_families(Families declared) {
    families = declared;
    return *this;
  }
  CollectorEntry& counts_system_wide() {
    system_wide = true;
    return *this;
  }
  CollectorEntry& with_commands(const CommandCounting& counting) {
    commands = &counting;
    return *this;
  }

  const char* name;
  // collectors.<name>: the keys of the collector's settings (its <name>_config.h), bound to them
  // in `config`; the loader reads, dumps and describes them (collectors/configuration.h).
  SettingsKeys settings;
  Enabled enabled;
  // Builds the collector; throws ConfigError (exit 2) or std::runtime_error (exit 1).
  Make make;
  // --check-config: one line each on what this collector can do here. Throws like make().
  Check check;
  // The file descriptors the collector will hold open (common/open_files.h); null for none.
  Files files = nullptr;
  // The hwperf_build_info label and value of the library the collector runs on; null for none.
  const char* library_label = nullptr;
  LibraryVersion library_version = nullptr;
  // The event groups the collector counts under this configuration, where their families are
  // and the levels worth a recording rule (events/rules.h): --print-rules and the summary of
  // experiment mode read them. No machine is probed. Null for a collector without groups.
  RuleScopes rule_scopes = nullptr;
  // The names of the families the collector will export under configured names (its
  // declared_families()) and of those of its constant families a configured name could take
  // (the topology's), from the configuration and topology alone: no counter opened, nothing
  // built that --check-config would not build. The start and
  // the dry run check them across collectors before building anything (registry.cpp), so both
  // refuse the same names with the same message. Null for none: a collector whose every family
  // name is fixed and its own (rapl: hwperf_rapl_*) has nothing another can collide with.
  Families families = nullptr;
  // Counts the whole machine (every CPU, a cgroup on every CPU, energy), which takes privileges
  // an ordinary user lacks (CAP_PERFMON or kernel.perf_event_paranoid <= 0; root for RAPL).
  // Experiment mode started by such a user without a configuration file leaves these out, in
  // one log line, rather than have each warn about what it cannot open.
  bool system_wide = false;
  // Experiment mode's commands, for the one collector that counts them; null for the others.
  const CommandCounting* commands = nullptr;
};

// Declared and constant families of a built collector: what CollectorSet::add claims, and what
// an entry whose families are all constant can declare by building its collector.
std::vector<FamilyDeclaration> exported_families(Collector& collector);

// The families `events` and the members of `groups` will be exported as at `level`
// (events::name_families on each event's `metric:`, else its default name; a member's metric),
// with where each was configured: the `families` of a counting collector. Nothing is looked up
// or opened; an event whose name is refused is left out, as resolving the events refuses it. A
// name two of them share is one family, declared once by its first.
std::vector<FamilyDeclaration> configured_families(
    const std::vector<EventSpec>& events, const std::vector<events::GroupDefinition>& groups,
    std::string_view level);

// The make() of an entry whose factory takes PAPI's preset definitions and returns its own
// collector type (process targets, containers).
template <auto factory>
std::unique_ptr<Collector> make_with_presets(const Config& config, const Topology& topology,
                                             const CollectorServices& services) {
  return factory(config, topology, services.presets);
}

}  // namespace hwperf
