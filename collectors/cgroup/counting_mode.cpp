#include "collectors/cgroup/counting_mode.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "common/log.h"
#include "common/text.h"
#ifdef HWPERF_HAVE_BPF
#include "collectors/perf/bpf/bpf_support.h"
#include "collectors/perf/bpf/engine_backend.h"
#endif

namespace hwperf::cgroup {
namespace {

constexpr const char* kNotBuilt =
    "the BPF engine, which this build of the exporter leaves out (built without HWPERF_BPF: "
    "clang, bpftool and libbpf-dev were not found; run scripts/deps.sh and build again)";

[[maybe_unused]] bool on_v2(const PerfEventHierarchy& hierarchy) {
  return hierarchy.kind == PerfEventHierarchy::Kind::v2;
}

std::string btf_root(const Config& config) {
  const auto& cgroup = config.get<CgroupCollectorConfig>();
  return cgroup.bpf_sysfs.empty() ? config.paths.sysfs : cgroup.bpf_sysfs;
}

#ifdef HWPERF_HAVE_BPF
// The first thing the facts lack, as the metric's reason says it.
std::string short_reason(const perf::bpf::BpfFacts& facts) {
  if (!facts.cap_sys_admin && !(facts.cap_bpf && facts.cap_perfmon)) return "no_capabilities";
  if (!facts.btf_present) return "no_btf";
  if (!facts.perf_event_on_cgroup_v2) return "perf_event_not_on_cgroup_v2";
  return "kernel_too_old";
}
#endif

// The engine for `layout`, or why it did not open (in `why`).
std::shared_ptr<const perf::CountingBackend> open_engine(
    [[maybe_unused]] const Config& config, [[maybe_unused]] const PerfEventHierarchy& hierarchy,
    [[maybe_unused]] std::shared_ptr<const perf::CounterLayout> layout, std::string& why) {
#ifdef HWPERF_HAVE_BPF
  const auto& cgroup = config.get<CgroupCollectorConfig>();
  perf::bpf::EngineOptions options;
  // Every cgroup that runs has an entry until it is removed and reclaimed, not only those
  // counted: room for the node's other cgroups beside max_cgroups.
  options.max_cgroups = std::max<std::size_t>(1024, 4 * std::size_t{cgroup.max_cgroups});
  // A rescan opens the cgroups it found before it closes those gone: room for both at the cap.
  options.max_tracked = 2 * std::size_t{cgroup.max_cgroups};
  options.sysfs = btf_root(config);
  options.procfs = config.paths.procfs;
  options.perf_event_on_cgroup_v2 = on_v2(hierarchy);
  try {
    return std::make_shared<perf::bpf::EngineBackend>(std::move(layout), std::move(options));
  } catch (const std::exception& e) {
    why = e.what();
    return nullptr;
  }
#else
  why = kNotBuilt;
  return nullptr;
#endif
}

}  // namespace

const char* mode_name(CountingMode mode) { return to_string(mode); }

std::vector<std::string> bpf_missing([[maybe_unused]] const std::string& sysfs,
                                     [[maybe_unused]] const PerfEventHierarchy& hierarchy) {
#ifdef HWPERF_HAVE_BPF
  return perf::bpf::missing_for_bpf(perf::bpf::probe_bpf_facts(sysfs, on_v2(hierarchy)));
#else
  return {kNotBuilt};
#endif
}

std::optional<unsigned long> engine_descriptors(const Config& config, std::size_t events,
                                                std::size_t cpus) {
  const CountingMode configured = config.get<CgroupCollectorConfig>().mode;
  if (configured == CountingMode::perf) return std::nullopt;
  if (configured == CountingMode::automatic) {
    const auto hierarchy = read_perf_event_hierarchy(config.paths.procfs, config.paths.sysfs);
    if (!bpf_missing(btf_root(config), hierarchy).empty()) return std::nullopt;
  }
#ifdef HWPERF_HAVE_BPF
  return static_cast<unsigned long>((events + 1) * cpus + perf::bpf::kEngineBpfDescriptors);
#else
  return static_cast<unsigned long>((events + 1) * cpus);  // mode: bpf refuses to start anyway
#endif
}

ChosenMode choose_mode(const Config& config, const PerfEventHierarchy& hierarchy,
                       std::shared_ptr<const perf::CounterLayout> layout) {
  const CountingMode configured = config.get<CgroupCollectorConfig>().mode;
  ChosenMode chosen;
  if (configured == CountingMode::perf) {
    chosen.reason = "configured";
    chosen.said = "cgroup: counting with perf events per cgroup (collectors.cgroup.mode: perf)";
    return chosen;
  }
  const std::string prefix = configured == CountingMode::bpf
                                 ? "collectors.cgroup.mode: bpf: "
                                 : "cgroup: collectors.cgroup.mode: auto: ";
  const auto missing = bpf_missing(btf_root(config), hierarchy);
  std::string why;
  if (missing.empty()) chosen.backend = open_engine(config, hierarchy, std::move(layout), why);
  if (chosen.backend) {
    chosen.mode = CountingMode::bpf;
    chosen.reason = configured == CountingMode::bpf ? "configured" : "bpf_available";
    chosen.said = prefix + "counting with the BPF engine (one counter per CPU and event)";
    return chosen;
  }
  if (!missing.empty()) {
#ifdef HWPERF_HAVE_BPF
    why = perf::bpf::bpf_unavailable_message(missing);
    chosen.reason = short_reason(perf::bpf::probe_bpf_facts(btf_root(config), on_v2(hierarchy)));
#else
    why = "BPF counting cannot start here: " + join(missing, "; ");
    chosen.reason = "bpf_not_built";
#endif
  } else {
    chosen.reason = "engine_failed";
  }
  if (configured == CountingMode::bpf) throw std::runtime_error(prefix + why);
  chosen.said = prefix + "counting with perf events per cgroup: " + why;
  return chosen;
}

}  // namespace hwperf::cgroup
