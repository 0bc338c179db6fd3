// Whether the BPF engine can run here, and if not, what is missing, each named with its remedy:
// "mode: bpf where BPF cannot load is a startup error naming what is missing" (issue 38). The
// facts are read once (probe_bpf_facts); what they lack is decided by a pure function.
#pragma once

#include <string>
#include <vector>

namespace hwperf::perf::bpf {

struct BpfFacts {
  // The kernel's own type information, which the program's CO-RE reads and its tp_btf
  // attachment need: <sysfs>/kernel/btf/vmlinux (CONFIG_DEBUG_INFO_BTF).
  std::string btf_path;
  bool btf_present = false;
  // Effective capabilities of this process (capget(2)).
  bool cap_bpf = false;
  bool cap_perfmon = false;
  bool cap_sys_admin = false;
  // The perf_event cgroup controller is on cgroup v2, whose ids the program keys its counts by
  // (bpf_get_current_cgroup_id): from cgroup::read_perf_event_hierarchy, which the caller reads.
  bool perf_event_on_cgroup_v2 = false;
};

// Reads BTF's presence under `sysfs` and this process's capabilities.
BpfFacts probe_bpf_facts(const std::string& sysfs, bool perf_event_on_cgroup_v2);

// What the facts lack, one sentence each with its remedy; empty when the engine can start.
std::vector<std::string> missing_for_bpf(const BpfFacts& facts);

// "BPF counting cannot start here: A; B" for a non-empty `missing`.
std::string bpf_unavailable_message(const std::vector<std::string>& missing);

}  // namespace hwperf::perf::bpf
