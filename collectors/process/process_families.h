// The process targets' inner parts (process_collector.h), shared by the collector's two .cpp
// files: a target's state, the families of one scrape and the counts' series prepared as text.
// Internal to the folder.
#pragma once

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <prometheus/metric_family.h>

#include "collectors/metrics.h"
#include "collectors/perf/counter_set.h"
#include "collectors/prepared_family.h"
#include "collectors/process/process_collector.h"

namespace hwperf::process {

struct ProcessCollector::Target {
  Target(const ProcessTargetConfig& config, std::shared_ptr<const perf::CounterLayout> layout,
         const perf::CountingBackend& backend)
      : plan(config), counting(std::move(layout), backend) {}
  TargetPlan plan;  // only the rescan touches it, and roots
  // Every root process's threads, one member each, opened with inherit: what they start is
  // counted into them, and what an ended root counted stays in the totals.
  perf::CounterSet counting;
  std::map<ProcessIdentity, perf::CounterSet::Member> roots;
  std::mutex status_mutex;  // what a scrape reports of the last rescan
  TargetState state = TargetState::no_process;
  std::string reason;
  std::vector<ProcStat> counted;
  std::size_t threads = 0;
  std::unique_ptr<region::TargetRegions> regions;  // with collectors.process.regions
};

// The families of one scrape, in the order they are exported (after the regions').
struct ProcessCollector::Families {
  explicit Families(const perf::CountingPlan& plan);
  std::vector<prometheus::MetricFamily> counts;
  // [0] per ungrouped event, [1] per event group; each {enabled, running}.
  std::array<std::array<prometheus::MetricFamily, 2>, 2> times;
  prometheus::MetricFamily read_errors, state, info, processes, threads, descriptors;

  // After the counts and times: the status, in the order collect() exports it.
  void append_status(std::vector<prometheus::MetricFamily>& out) {
    for (auto* family : {&read_errors, &state, &info, &processes, &threads, &descriptors}) {
      out.push_back(std::move(*family));
    }
  }
};

// The counts' and times' families with every target's series, made once (the targets are fixed).
struct ProcessCollector::Text {
  std::vector<PreparedFamily> counts;                // plan_.families' order
  std::vector<std::array<PreparedFamily, 2>> times;  // those exported: events', then groups'
};

}  // namespace hwperf::process
