// The container collector's settings (collectors.cgroup) and their keys in the configuration
// file: cgroup events in the hierarchy the perf_event controller is bound to, summed per package
// or for the machine.
#pragma once

#include <string>
#include <vector>

#include "collectors/events/specs.h"
#include "common/enum_names.h"
#include "common/source_mark.h"
#include "config/config.h"
#include "config/settings_keys.h"

namespace hwperf {

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
// How the cgroups are counted (collectors.cgroup.mode; issue 38): perf, one perf_event cgroup
// event per (cgroup, CPU, event); bpf, one counter per (CPU, event) and a BPF program at each
// cgroup switch (collectors/perf/bpf); auto, bpf where it can load, perf otherwise. Spelled in
// kCountingModeNames, below the settings.
enum class CountingMode { automatic, perf, bpf };

struct CgroupCollectorConfig {
  bool enabled = false;
  // The same vocabulary as the PAPI collector. Empty = the default set, best effort.
  std::vector<EventSpec> events;
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
  CountingMode mode = CountingMode::automatic;
  // Tests only, no key: where the BPF engine looks for the kernel's BTF ("": paths.sysfs), so
  // that an empty fixture tree fakes a kernel without it.
  std::string bpf_sysfs;
};
// The spellings are the schemes kube-state-metrics writes in container_id ("<runtime>://<id>",
// the CRI runtime's name for itself), so that such a container joins; none leaves the id bare.
inline constexpr EnumName<ContainerRuntime> kContainerRuntimeNames[] = {
    {ContainerRuntime::none, "none"},
    {ContainerRuntime::containerd, "containerd"},
    {ContainerRuntime::crio, "cri-o"},
    {ContainerRuntime::docker, "docker"}};
inline const char* to_string(ContainerRuntime value) {
  return name_of(kContainerRuntimeNames, value);
}

inline constexpr EnumName<CountingMode> kCountingModeNames[] = {
    {CountingMode::automatic, "auto"}, {CountingMode::perf, "perf"}, {CountingMode::bpf, "bpf"}};
inline const char* to_string(CountingMode value) { return name_of(kCountingModeNames, value); }

// collectors.cgroup, bound to config.get<CgroupCollectorConfig>().
config_schema::Key cgroup_settings_keys(yaml_reader::Problems& problems, Config& config);

}  // namespace hwperf
