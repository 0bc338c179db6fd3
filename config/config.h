// Plain configuration structs with their defaults. Everything here is a value: it is loaded and
// validated once at startup (config/loader.h) and then handed, read-only, to the parts that need
// it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/enum_names.h"
#include "common/log.h"

namespace hwperf {

// Where a value came from in the YAML file, so that later validation (event names, CPU lists)
// can point the user at the line. line/column are 1-based; 0 means "not from a file" (a default).
struct SourceMark {
  std::string file;
  int line = 0;
  int column = 0;
  std::string to_string() const;  // "file:line:column", or "default" when not from a file
};

// Every IPv4 address, on the port registered for this exporter in Prometheus' default port
// allocations wiki page.
inline constexpr const char* kDefaultListenAddress = ":9477";
inline constexpr const char* kDefaultTelemetryPath = "/metrics";
// The liveness path: never rate limited nor authenticated, and no telemetry path may take it.
inline constexpr const char* kHealthPath = "/-/healthy";

struct WebConfig {
  std::string listen_address = kDefaultListenAddress;
  SourceMark listen_address_mark;  // where the file set it; a default or a flag has none
  std::string telemetry_path = kDefaultTelemetryPath;
};

// What is wrong with a telemetry path, or "" when nothing is: it must start with /, and it must
// not be a path the exporter serves something else at (/-/healthy, the landing page /), or the
// metrics could not be reached. The one check behind web.telemetry_path and the flag.
std::string telemetry_path_problem(const std::string& path);

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
inline constexpr EnumName<Granularity> kGranularityNames[] = {{Granularity::cpu, "cpu"},
                                                              {Granularity::core, "core"},
                                                              {Granularity::package, "package"},
                                                              {Granularity::machine, "machine"}};

enum class CountingDomain { user, kernel, all };
inline constexpr EnumName<CountingDomain> kCountingDomainNames[] = {
    {CountingDomain::user, "user"},
    {CountingDomain::kernel, "kernel"},
    {CountingDomain::all, "all"}};

// How the PAPI collector binds counters to CPUs. `auto` tries PAPI_CPU_ATTACH (the real-PMU way)
// and falls back to per-CPU event qualifiers when PAPI cannot attach (no hardware PMU).
enum class PapiAttachMode { automatic, cpu_attach, qualifier };
inline constexpr EnumName<PapiAttachMode> kPapiAttachModeNames[] = {
    {PapiAttachMode::automatic, "auto"},
    {PapiAttachMode::cpu_attach, "cpu_attach"},
    {PapiAttachMode::qualifier, "qualifier"}};

// collectors.papi.cpus, parsed once when the configuration is read.
struct CpuSelection {
  bool all = true;                // every CPU of the topology
  std::vector<unsigned> cpus;     // otherwise these, ascending and unique
  SourceMark mark;                // where the list was written
  std::string to_string() const;  // "all" or the CPU list, folded ("0-3,8")
};

struct PapiEventConfig {
  std::string event;   // PAPI preset or native name, with qualifiers
  std::string metric;  // optional metric base name ("" = derived from the event)
  std::string help;    // optional HELP text ("" = derived from PAPI's description)
  SourceMark mark;
};

// An event group (collectors/events/groups.h): events the kernel schedules together, so that
// the ratios of their counts are ratios over the same time, and the formulas that combine them.
// Built-in groups are named only (`collectors.papi.groups: [ipc]`); user groups are defined
// under the top-level `groups:` key.
struct GroupEventConfig {
  std::string variable;  // the name formulas use: "ins"
  PapiEventConfig event;
};
struct GroupMetricConfig {
  std::string name;  // "ipc": recorded as <level>:hwperf_<name>:rate<window>
  std::string expr;  // "ins / cyc": +, -, *, /, parentheses, numbers, the group's variables
  std::string help;
  SourceMark mark;
};
struct GroupConfig {
  std::string name;
  std::vector<GroupEventConfig> events;
  std::vector<GroupMetricConfig> metrics;
  SourceMark mark;
};
// One name in a collector's `groups:` list, with where it was written.
struct GroupRef {
  std::string name;
  SourceMark mark;
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
  std::vector<PapiEventConfig> events;
  bool events_given = false;
  // Groups counted beside the events, each one kernel group per CPU. Not given: the default
  // groups, best effort (those this machine cannot count are skipped).
  std::vector<GroupRef> groups;
  bool groups_given = false;
};

enum class RaplInterface { automatic, powercap, perf, msr };
inline constexpr EnumName<RaplInterface> kRaplInterfaceNames[] = {
    {RaplInterface::automatic, "auto"},
    {RaplInterface::powercap, "powercap"},
    {RaplInterface::perf, "perf"},
    {RaplInterface::msr, "msr"}};

enum class RaplDomain { package, core, uncore, dram, psys };
inline constexpr EnumName<RaplDomain> kRaplDomainNames[] = {{RaplDomain::package, "package"},
                                                            {RaplDomain::core, "core"},
                                                            {RaplDomain::uncore, "uncore"},
                                                            {RaplDomain::dram, "dram"},
                                                            {RaplDomain::psys, "psys"}};

// A wrap guard faster than the hardware updates its counters (about every millisecond) would
// only burn CPU.
inline constexpr double kMinWrapGuardIntervalSeconds = 0.001;
// A guard slower than an hour would let any RAPL counter wrap unseen (the longest wraps in minutes
// at full power), and a larger figure overflows the guard's timed wait.
inline constexpr double kMaxWrapGuardIntervalSeconds = 3600;
// No package draws 100 kW; a larger figure is a typo that would disable the plausibility check.
inline constexpr double kMaxPowerWatts = 100000;

struct RaplCollectorConfig {
  bool enabled = true;
  RaplInterface interface = RaplInterface::automatic;
  // Empty means every domain found.
  std::vector<RaplDomain> domains;
  // Upper bound on what one package can draw, used to size the wrap guard period and to reject
  // implausible deltas. 0 = take it from the hardware (power limit registers / constraints).
  double max_power_watts = 0;
  // 0 = derive from the counter range and max power (see collectors/rapl).
  double wrap_guard_interval_seconds = 0;
};

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

// Minimum and maximum of collectors.process.rescan_interval_seconds: faster would spend the CPU
// being measured on reading /proc; slower leaves new processes uncounted for a minute.
inline constexpr double kMinRescanIntervalSeconds = 0.1;
inline constexpr double kMaxRescanIntervalSeconds = 60;

struct ProcessCollectorConfig {
  bool enabled = true;  // and only built when there are targets
  // The same vocabulary as the PAPI collector. Empty = the default set, best effort.
  std::vector<PapiEventConfig> events;
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

// Per-container counting (collectors/cgroup): cgroup events in the hierarchy the perf_event
// controller is bound to, summed per package or for the machine.
struct CgroupPattern {
  std::string regex;  // over the cgroup path relative to the hierarchy root
  SourceMark mark;
};
struct CgroupRoot {
  std::string path;  // relative to the hierarchy root, without a leading '/'
  SourceMark mark;
};
// The container runtime behind the kubelet's cgroupfs driver, whose container cgroups
// (kubepods/<qos>/pod<uid>/<id>) do not name it (collectors.cgroup.runtime); spelled in
// kContainerRuntimeNames, below the settings.
enum class ContainerRuntime { none, containerd, crio, docker };

struct CgroupCollectorConfig {
  bool enabled = false;
  // The same vocabulary as the PAPI collector. Empty = the default set, best effort.
  std::vector<PapiEventConfig> events;
  bool events_given = false;
  std::vector<GroupRef> groups;  // each one kernel group per cgroup and CPU
  bool groups_given = false;
  Granularity granularity = Granularity::package;  // package or machine
  // Besides the containers and services discovery recognises: every leaf under these cgroups,
  // and leaves whose path matches one of these. Only leaves are counted anywhere: a cgroup event
  // counts its descendants too, so a parent and its child would count twice.
  std::vector<CgroupRoot> roots;
  std::vector<CgroupPattern> match;
  // At most this many cgroups are counted (CPUs x events descriptors each); the rest are left
  // out, counted in a metric.
  unsigned max_cgroups = 256;
  double rescan_interval_seconds = 3;
  ContainerRuntime runtime = ContainerRuntime::none;
};
// The spellings are the schemes kube-state-metrics writes in container_id ("<runtime>://<id>",
// the CRI runtime's name for itself), so that such a container joins; none leaves the id bare.
inline constexpr EnumName<ContainerRuntime> kContainerRuntimeNames[] = {
    {ContainerRuntime::none, "none"},
    {ContainerRuntime::containerd, "containerd"},
    {ContainerRuntime::crio, "cri-o"},
    {ContainerRuntime::docker, "docker"}};

// The uncore collector (collectors/uncore): memory controller PMUs and the msr PMU. On by default,
// best effort as PAPI's default events: its system-wide events need kernel.perf_event_paranoid <= 0
// or CAP_PERFMON, and what this machine or these privileges do not allow is left out once at
// startup (logged, and in hwperf_uncore_source_available) while the exporter serves the rest.
struct UncoreCollectorConfig {
  bool enabled = true;
  // What one package's memory can move, from its channels and their speed, which the PMUs do not
  // say: exported so that a rule can give the share of it in use. 0: not exported.
  double peak_memory_bytes_per_second = 0;
};

// 1 MB/s is no memory system; 100 TB/s is a hundred times today's HBM, so a larger figure is a
// typo (bits for bytes, an extra exponent).
inline constexpr double kMinPeakMemoryBytesPerSecond = 1e6;
inline constexpr double kMaxPeakMemoryBytesPerSecond = 1e14;

// ---- hwmon collector settings (collectors/hwmon) ------------------------------------------------
// Power meters the kernel's hwmon class exposes (ACPI power meters, X-Gene SLIMpro, IBM AEM):
// energy counted by the chip, or power integrated into joules on a tick of the collector's own.
// A tick below 10 ms would only burn CPU (an ACPI meter's driver serves a cached value for its
// sampling time anyway); above a minute the integral would hold one reading for too long.
inline constexpr double kMinHwmonIntervalSeconds = 0.01;
inline constexpr double kMaxHwmonIntervalSeconds = 60;
// A reading unchanged for a day is stuck; below a second every steady load would look stuck.
inline constexpr double kMinHwmonStaleAfterSeconds = 1;
inline constexpr double kMaxHwmonStaleAfterSeconds = 86400;

struct HwmonCollectorConfig {
  bool enabled = true;  // best effort: on where meters exist, says so where none do
  // How often every meter is read: power readings are integrated between two reads.
  double interval_seconds = 1;
  // A reading that has not changed for longer than this is stuck: its joules stop growing and its
  // state says `stale` until it moves again. 0: never.
  double stale_after_seconds = 300;
};
// ---- end of hwmon collector settings ------------------------------------------------------------

struct CollectorsConfig {
  TopologyCollectorConfig topology;
  PapiCollectorConfig papi;
  RaplCollectorConfig rapl;
  ProcessCollectorConfig process;
  CgroupCollectorConfig cgroup;
  UncoreCollectorConfig uncore;
  HwmonCollectorConfig hwmon;
};

struct Config {
  WebConfig web;
  PathsConfig paths;
  TopologyConfig topology;
  CollectorsConfig collectors;
  std::vector<GroupConfig> groups;  // user groups, beside the built-in ones
  LogLevel log_level = LogLevel::info;
  std::string source_file;  // "" when running on defaults
};

inline const char* to_string(Granularity value) { return name_of(kGranularityNames, value); }
inline const char* to_string(CountingDomain value) { return name_of(kCountingDomainNames, value); }
inline const char* to_string(PapiAttachMode value) { return name_of(kPapiAttachModeNames, value); }
inline const char* to_string(RaplInterface value) { return name_of(kRaplInterfaceNames, value); }
inline const char* to_string(RaplDomain value) { return name_of(kRaplDomainNames, value); }
inline const char* to_string(ContainerRuntime value) {
  return name_of(kContainerRuntimeNames, value);
}

}  // namespace hwperf
