// collectors.cgroup.mode decided at startup (issue 38): the BPF engine where the configuration
// asks for it or (auto) where it can load, the per-cgroup perf events otherwise, with the reason,
// which the log states once and hwperf_container_counting_mode exports. The same decision serves
// the start and --check-config, so that the dry run refuses what the start would.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collectors/cgroup/cgroup_config.h"
#include "collectors/cgroup/hierarchy.h"
#include "collectors/perf/counter_set.h"

namespace hwperf::cgroup {

struct ChosenMode {
  CountingMode mode = CountingMode::perf;  // perf or bpf, never automatic
  // Short, for the metric's label: "configured", "bpf_available", or why auto did not take BPF
  // (no_btf, no_capabilities, perf_event_not_on_cgroup_v2, kernel_too_old, bpf_not_built,
  // engine_failed).
  std::string reason;
  std::string said;  // the log's sentence, with what is missing and its remedy
  // The engine counting `layout` in bpf mode; null in perf mode.
  std::shared_ptr<const perf::CountingBackend> backend;
};

// What BPF counting lacks here (one sentence each, with its remedy), under `sysfs` for the BTF;
// empty when it can start. Without the engine built, that it is not.
std::vector<std::string> bpf_missing(const std::string& sysfs, const PerfEventHierarchy& hierarchy);

// Decides the mode for `layout` on `hierarchy`: mode: bpf where BPF cannot load throws
// std::runtime_error naming what is missing (a startup error, which --check-config reports the
// same way); auto falls back to perf with the reason.
ChosenMode choose_mode(const Config& config, const PerfEventHierarchy& hierarchy,
                       std::shared_ptr<const perf::CounterLayout> layout);

// The descriptors the engine would hold for `events` on `cpus` where the start will count with
// it (mode: bpf, or auto where nothing BPF needs is missing), for the open-file check before
// anything is opened; nothing where perf events will count. Should the engine then fail to open
// in auto, the perf events open what the limit allows and say what they could not.
std::optional<unsigned long> engine_descriptors(const Config& config, std::size_t events,
                                                std::size_t cpus);

// The metric's and log's name of a chosen mode.
const char* mode_name(CountingMode mode);

}  // namespace hwperf::cgroup
