// Process targets: hardware and software events counted for the processes a target names (a pid,
// a pidfile, or processes matched by name), every thread of each, on the perf_event backend
// (collectors/perf). Which processes are counted is decided in the background (target_plan.h);
// a scrape only reads the counters that are open.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "collectors/collector.h"
#include "collectors/events/emission.h"
#include "collectors/events/groups.h"
#include "collectors/events/presets.h"
#include "collectors/perf/counted_events.h"
#include "collectors/perf/counter_set.h"
#include "collectors/perf/perf_event.h"
#include "collectors/process/target_plan.h"
#include "collectors/region/region_export.h"
#include "common/periodic_thread.h"
#include "collectors/process/process_config.h"
#include "topology/topology.h"

namespace hwperf::process {

// One configured event as the process families export it, resolved at startup.
using ProcessEvent = perf::CountedEvent;

struct ProcessCollectorSettings {
  std::string procfs;
  std::vector<ProcessTargetConfig> targets;
  std::vector<ProcessEvent> events;  // ungrouped
  std::vector<perf::CountedGroup> groups;
  std::vector<std::string> group_lines;  // --check-config, per group asked for
  std::vector<HardwareThread> cpus;      // per_cpu: one slot each; empty: one slot, any CPU
  double rescan_interval_seconds = 3;
  // Where the counters are opened: the kernel's perf_event_open, or another engine (a fake in
  // tests) counting the same units per thread.
  const perf::CountingBackend* backend = &perf::perf_event_backend();
  CountingDomain domain = CountingDomain::all;
  std::string domain_note;  // why the domain is narrower than configured, "" when it is not
  // collectors.process.regions: the hwperf_region_* families, from the events above.
  bool regions = false;
  std::vector<region::RegionEvent> region_events;
};

class ProcessCollector final : public Collector,
                               public NamedTargets,
                               public ConfiguredFamilies,
                               public PreparedText {
 public:
  explicit ProcessCollector(ProcessCollectorSettings settings);
  ~ProcessCollector() override;  // where Target is complete

  std::string name() const override { return "process"; }
  void collect(std::vector<prometheus::MetricFamily>& out) override;
  // collect()'s bytes, the counts' and times' series from text made once (process_export.cpp).
  void collect_text(std::string& out, ExpositionFormat format) override;
  std::vector<FamilyDeclaration> declared_families() const override;

  // Looks at /proc once and attaches or detaches what changed; the background thread calls it
  // every rescan interval, and the constructor once, so that the first scrape already counts.
  void rescan();
  void refresh() override { rescan(); }
  // The configured targets' names, for ?target=.
  std::vector<std::string> target_names() const override;
  // Only the configured targets whose names are listed, for ?target= (all when empty).
  void collect_targets(std::vector<prometheus::MetricFamily>& out,
                       const std::vector<std::string>& names) override;
  const std::vector<ProcessEvent>& events() const { return settings_.events; }
  const std::vector<perf::CountedGroup>& groups() const { return settings_.groups; }
  const std::vector<std::string>& group_lines() const { return settings_.group_lines; }
  // Experiment mode: the summed counts of each ungrouped event of one target, in events() order.
  std::vector<std::uint64_t> target_totals(const std::string& target);

 private:
  struct Target;
  struct Families;
  struct Text;
  // One target's counts, read at a scrape (the values summed from a derived preset's terms).
  struct TargetRead {
    const std::string* name = nullptr;
    perf::CounterTotals totals;
    std::vector<std::uint64_t> values;
  };
  void rescan_target(Target& target, const Snapshot& snapshot, const ProcessFacts& facts);
  // Opens a root process's counters (every thread, with inherit): 0 once it is counted, else
  // the errno (ESRCH: it has gone).
  int attach(Target& target, const ProcStat& process, bool from_exec);
  // What a scrape reports of the target after a rescan, logged where it changed.
  void publish(Target& target, TargetState state, std::string reason,
               std::vector<ProcStat> counted);

  // What a scrape exports (process_export.cpp): a target's counters read once; its counts' and
  // times' series, its status (and its regions'), the domain family; the counts' series as text.
  TargetRead read_target(Target& target) const;
  std::size_t time_families() const;  // the time families exported: events', then groups'
  void add_counts(Families& families, const TargetRead& read) const;
  void add_status(Families& families, Target& target, const TargetRead& read,
                  std::optional<region::RegionFamilies>& regions);
  std::optional<region::RegionFamilies> region_families() const;
  void append_domain(std::vector<prometheus::MetricFamily>& out) const;
  void prepare_text();
  void write_counts(std::string& out, ExpositionFormat format,
                    const std::vector<TargetRead>& reads) const;

  ProcessCollectorSettings settings_;
  perf::CountingPlan plan_;  // the ungrouped events, then the groups
  // plan_'s units, on each CPU with per_cpu, else on the one slot -1 (a thread wherever it runs).
  std::shared_ptr<const perf::CounterLayout> layout_;
  // One series per CPU a target ran on with per_cpu, else one for the target (slot 0).
  std::vector<events::CounterSeries> slot_series_;
  std::vector<std::unique_ptr<Target>> targets_;
  std::unique_ptr<Text> text_;  // the counts' and times' series of every target, prepared
  std::mutex rescan_mutex_;     // one rescan at a time
  std::optional<PeriodicThread> rescanner_;  // last: stopped before the members it uses go
};

// The groups counted when the configuration lists neither events nor groups (best effort, and
// then no ungrouped events): what perf stat shows a command by default.
std::vector<std::string> default_group_names();
// The groups the process targets count under `config`: the listed ones, the defaults when
// neither events nor groups are listed, none when only events are. Throws ConfigError.
std::vector<events::GroupDefinition> process_groups(const Config& config);

// Builds the collector from the configuration (process_factory.cpp): events encoded through
// libpfm4 and probed on the exporter's own thread, pidfiles checked, CPUs chosen; every problem
// a ConfigError (exit 2) naming file:line:column and what to do.
std::unique_ptr<ProcessCollector> make_process_collector(const Config& config,
                                                         const Topology& topology,
                                                         const events::PresetCatalog& presets);

}  // namespace hwperf::process
