// Plain configuration structs with their defaults. Everything here is a value: it is loaded and
// validated once at startup (config/loader.h) and then handed, read-only, to the parts that need it.
#pragma once

#include "common/log.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hwperf {


// Where a value came from in the YAML file, so that later validation (event names, CPU lists)
// can point the user at the line. line/column are 1-based; 0 means "not from a file" (a default).
struct SourceMark {
  std::string file;
  int line = 0;
  int column = 0;
  std::string to_string() const;  // "file:line:column", or "default" when not from a file
};

struct WebConfig {
  std::string listen_address = ":9477";
  std::string telemetry_path = "/metrics";
};

struct PathsConfig {
  std::string sysfs = "/sys";
  std::string procfs = "/proc";
  std::string devfs = "/dev";
};

struct TopologyConfig {
  enum class Kind { system, xml, synthetic };
  Kind kind = Kind::system;
  std::string argument;  // XML path or synthetic description
  SourceMark mark;
  std::string to_string() const;  // "system", "xml:PATH", "synthetic:DESC"
};

struct TopologyCollectorConfig {
  bool enabled = true;
};

enum class Granularity { cpu, core, package, machine };
enum class CountingDomain { user, kernel, all };

// How the PAPI collector binds counters to CPUs. `auto` tries PAPI_CPU_ATTACH (the real-PMU way)
// and falls back to per-CPU event qualifiers when PAPI cannot attach (no hardware PMU).
enum class PapiAttachMode { automatic, cpu_attach, qualifier };

struct PapiEventConfig {
  std::string event;   // PAPI preset or native name, with qualifiers
  std::string metric;  // optional metric base name ("" = derived from the event)
  std::string help;    // optional HELP text ("" = derived from PAPI's description)
  SourceMark mark;
};

struct PapiCollectorConfig {
  bool enabled = true;
  std::string cpus = "all";  // "all" or a Linux CPU list such as "0-3,8,10-11"
  SourceMark cpus_mark;
  Granularity granularity = Granularity::cpu;
  CountingDomain domain = CountingDomain::all;
  PapiAttachMode attach = PapiAttachMode::automatic;
  bool multiplex = true;
  // Empty means "the default set, best effort": events this machine cannot count are skipped.
  // Events the user lists are strict.
  std::vector<PapiEventConfig> events;
  bool events_given = false;
};

enum class RaplInterface { automatic, powercap, perf, msr };

struct RaplCollectorConfig {
  bool enabled = true;
  RaplInterface interface = RaplInterface::automatic;
  // Empty means every domain found. Valid names: package, core, uncore, dram, psys.
  std::vector<std::string> domains;
  // Upper bound on what one package can draw, used to size the wrap guard period and to reject
  // implausible deltas. 0 = take it from the hardware (power limit registers / constraints).
  double max_power_watts = 0;
  // 0 = derive from the counter range and max power (see collectors/rapl).
  double wrap_guard_interval_seconds = 0;
};

struct CollectorsConfig {
  TopologyCollectorConfig topology;
  PapiCollectorConfig papi;
  RaplCollectorConfig rapl;
};

struct Config {
  WebConfig web;
  PathsConfig paths;
  TopologyConfig topology;
  CollectorsConfig collectors;
  LogLevel log_level = LogLevel::info;
  std::string source_file;  // "" when running on defaults
};

const char* to_string(Granularity granularity);
const char* to_string(CountingDomain domain);
const char* to_string(PapiAttachMode mode);
const char* to_string(RaplInterface interface);

}  // namespace hwperf
