// The container collector's families (cgroup_collector.h), shared by its two .cpp files: the
// families of one scrape, and the cgroups' series prepared as text. Internal to the folder.
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include <prometheus/metric_family.h>

#include "collectors/cgroup/cgroup_collector.h"
#include "collectors/metrics.h"
#include "collectors/prepared_family.h"

namespace hwperf::cgroup {

// The families of one scrape, in the order they are exported.
struct CgroupCollector::Families {
  explicit Families(const perf::CountingPlan& plan) : counts(perf::counter_families(plan)) {}
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
