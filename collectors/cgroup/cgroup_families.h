// The container collector's families (cgroup_collector.h), shared by its two .cpp files: the
// families of one scrape, and the cgroups' series prepared as text. Internal to the folder.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <prometheus/metric_family.h>

#include "collectors/cgroup/cgroup_collector.h"
#include "collectors/metrics.h"
#include "collectors/prepared_family.h"

namespace hwperf::cgroup {

// hwperf_container_unattributed_<metric>_total of each counts family
// hwperf_container_<metric>_total, built and validated here only.
inline std::vector<prometheus::MetricFamily> unattributed_families(const perf::CountingPlan& plan) {
  constexpr std::string_view prefix = "hwperf_container_";
  constexpr std::string_view suffix = "_total";
  std::vector<prometheus::MetricFamily> families;
  for (const auto& family : plan.families) {
    std::string_view metric = family.name;
    if (metric.substr(0, prefix.size()) == prefix) metric.remove_prefix(prefix.size());
    if (metric.size() >= suffix.size() && metric.substr(metric.size() - suffix.size()) == suffix) {
      metric.remove_suffix(suffix.size());
    }
    families.push_back(make_counter_family(
        {"container", "unattributed", metric},
        "What the BPF engine counted of " + family.name +
            " across cgroup switches its program did not run at (bpf mode): given to no cgroup, "
            "so that a cgroup's count plus this brackets what it used."));
  }
  return families;
}

// The families of one scrape, in the order they are exported.
struct CgroupCollector::Families {
  explicit Families(const perf::CountingPlan& plan)
      : counts(perf::counter_families(plan)), unattributed(unattributed_families(plan)) {}
  prometheus::MetricFamily available =
      make_gauge_family({"container", "available"},
                        "1 when containers are counted on this node; 0 when they cannot "
                        "be, with the reason (the log says what to do).");
  std::vector<prometheus::MetricFamily> counts;
  prometheus::MetricFamily group_enabled = make_counter_family(
      {"container", "group", "enabled", "seconds"},
      "Time the kernel had each event group enabled for the cgroup, summed over its CPUs (a "
      "cgroup event is enabled while the cgroup's tasks run on the CPU). Below enabled, running "
      "time means the group was multiplexed: all its counts are then scaled by the group's one "
      "running/enabled of each scrape interval.");
  prometheus::MetricFamily group_running = make_counter_family(
      {"container", "group", "running", "seconds"},
      "Time each event group was really on the counters, all its events together, for the "
      "cgroup; rate(running) / rate(enabled) is the share counted, 1 unless multiplexed.");
  // In bpf mode (a backend that reports CountingBackend::unattributed): what the engine counted
  // across cgroup switches its program did not run at and gave to no cgroup, one family per
  // counts family (hwperf_container_<metric>_total's hwperf_container_unattributed_<metric>_total),
  // and how many switches it missed. Busy cgroups' counts plus these bracket their cpu.stat.
  std::vector<prometheus::MetricFamily> unattributed;
  prometheus::MetricFamily missed_switches = make_counter_family(
      {"container", "missed", "switches"},
      "Cgroup switches the BPF program did not run at (bpf mode; the kernel skips it while "
      "another BPF program runs on the CPU): what the counters advanced across them is in "
      "hwperf_container_unattributed_*_total, given to no cgroup.");
  bool engine = false;  // whether the two above were filled (bpf mode)
  prometheus::MetricFamily cgroups =
      make_gauge_family({"container", "cgroups"},
                        "Cgroups counted (leaves: containers, services and configured roots' "
                        "leaves).");
  prometheus::MetricFamily left_out = make_gauge_family(
      {"container", "left_out"},
      "Cgroups discovery found but does not count: over_cap (collectors.cgroup.max_cgroups), "
      "open_failed (the log says why).");
  prometheus::MetricFamily descriptors = make_gauge_family(
      {"container", "open_counters"}, "Perf event descriptors the cgroup collector holds open.");
  prometheus::MetricFamily read_errors = make_counter_family(
      {"container", "read", "errors"}, "Counter reads that failed; their interval is not counted.");
  prometheus::MetricFamily root_state = make_gauge_family(
      {"container", "root", "state"},
      "1 for each configured root's state: counting, missing, no_leaf, or "
      "not_in_perf_event_hierarchy (it exists only where the perf_event controller does not "
      "look, so its processes count nothing); the log says what to do.");
  prometheus::MetricFamily counting_mode = make_gauge_family(
      {"container", "counting", "mode"},
      "1 for how cgroups are counted (collectors.cgroup.mode): perf, a perf event per cgroup, "
      "CPU and event; bpf, a counter per CPU and event and a BPF program at each cgroup switch; "
      "with the reason (configured, bpf_available, or what auto found missing for bpf).");
  prometheus::MetricFamily hierarchy = make_gauge_family(
      {"container", "hierarchy", "info"},
      "The cgroup hierarchy the perf_event controller is bound to, which every count filters by.");

  // After the cgroups' families: the status, in the order collect() exports it.
  void append_status(std::vector<prometheus::MetricFamily>& out, bool roots) {
    for (auto* family : {&cgroups, &left_out, &descriptors, &read_errors}) {
      out.push_back(std::move(*family));
    }
    if (engine) {
      for (auto& family : unattributed) out.push_back(std::move(family));
      out.push_back(std::move(missed_switches));
    }
    if (roots) out.push_back(std::move(root_state));
    out.push_back(std::move(counting_mode));
    out.push_back(std::move(hierarchy));
  }
};

struct CgroupCollector::Text {
  std::vector<PreparedFamily> counts;  // plan_.families' order
  std::optional<PreparedFamily> group_enabled;
  std::optional<PreparedFamily> group_running;
};

}  // namespace hwperf::cgroup
