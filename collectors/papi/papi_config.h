// The PAPI collector's settings (collectors.papi) and their keys in the configuration file.
#pragma once

#include <string>
#include <vector>

#include "collectors/events/specs.h"
#include "common/enum_names.h"
#include "common/source_mark.h"
#include "config/config.h"
#include "config/settings_keys.h"

namespace hwperf {

// How the PAPI collector binds counters to CPUs. `auto` tries PAPI_CPU_ATTACH (the real-PMU way)
// and falls back to per-CPU event qualifiers when PAPI cannot attach (no hardware PMU).
enum class PapiAttachMode { automatic, cpu_attach, qualifier };
inline constexpr EnumName<PapiAttachMode> kPapiAttachModeNames[] = {
    {PapiAttachMode::automatic, "auto"},
    {PapiAttachMode::cpu_attach, "cpu_attach"},
    {PapiAttachMode::qualifier, "qualifier"}};
inline const char* to_string(PapiAttachMode value) { return name_of(kPapiAttachModeNames, value); }

// collectors.papi.cpus, parsed once when the configuration is read.
struct CpuSelection {
  bool all = true;                // every CPU of the topology
  std::vector<unsigned> cpus;     // otherwise these, ascending and unique
  SourceMark mark;                // where the list was written
  std::string to_string() const;  // "all" or the CPU list, folded ("0-3,8")
};

struct PapiCollectorConfig {
  bool enabled = true;
  CpuSelection cpus;
  Granularity granularity = Granularity::cpu;
  CountingDomain domain = CountingDomain::all;
  PapiAttachMode attach = PapiAttachMode::automatic;
  bool multiplex = true;
  // Empty means "the default set, best effort": events this machine cannot count are skipped.
  // Events the user lists are strict.
  std::vector<EventSpec> events;
  bool events_given = false;
  // Groups counted beside the events, each one kernel group per CPU. Not given: the default
  // groups, best effort (those this machine cannot count are skipped).
  std::vector<GroupRef> groups;
  bool groups_given = false;
};

// collectors.papi, bound to config.get<PapiCollectorConfig>().
config_schema::Key papi_settings_keys(yaml_reader::Problems& problems, Config& config);

}  // namespace hwperf
