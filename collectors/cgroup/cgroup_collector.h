// Per-container counting: one cgroup event per (leaf cgroup, CPU, event) in the hierarchy the
// perf_event controller is bound to (perf_event_open(2) with PERF_FLAG_PID_CGROUP), each event
// group one kernel group per (leaf cgroup, CPU) read with one read(2), summed per
// package or for the machine, labelled so that PromQL can join kube-state-metrics. Which cgroups
// are counted is decided in the background (discovery.h); each cgroup's counters are one counter
// set (perf/counter_set.h), which a scrape only reads.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "collectors/cgroup/discovery.h"
#include "collectors/cgroup/hierarchy.h"
#include "collectors/cgroup/identity.h"
#include "collectors/collector.h"
#include "collectors/events/emission.h"
#include "collectors/events/presets.h"
#include "collectors/perf/counted_events.h"
#include "collectors/perf/counter_set.h"
#include "collectors/perf/perf_event.h"
#include "common/files.h"
#include "common/periodic_thread.h"
#include "common/unique_fd.h"
#include "collectors/cgroup/cgroup_config.h"
#include "topology/topology.h"

namespace hwperf::cgroup {

struct CgroupCollectorSettings {
  // Why containers cannot be counted on this node ("" when they can): the collector then only
  // says so (hwperf_container_available 0), and the other collectors keep serving, as a node
  // without RAPL does.
  std::string unavailable;
  PerfEventHierarchy hierarchy;
  std::filesystem::path root;              // the hierarchy's directory as this process reaches it
  std::vector<perf::CountedEvent> events;  // ungrouped
  std::vector<perf::CountedGroup> groups;
  std::vector<std::string> group_lines;  // --check-config, per group asked for
  std::vector<HardwareThread> cpus;      // one counter per cgroup and event on each
  // As configured: granularity (package or machine), roots, match, max_cgroups, the rescan
  // interval and the runtime of cgroupfs' bare ids (its events and groups are resolved above).
  CgroupCollectorConfig configured;
  // Where the online CPUs are read at every rescan (common/cpu_list.h): a CPU that comes back
  // gets new counters (the kernel never re-enables events a CPU lost going offline). Empty: not
  // read.
  std::string sysfs;
  // Where the counters are opened: the kernel's perf_event_open, or another engine (a fake in
  // tests) counting the same units per cgroup and CPU.
  const perf::CountingBackend* backend = &perf::perf_event_backend();
  // The backend's owner where the factory made one (the BPF engine, collectors.cgroup.mode);
  // null for perf_event_open's.
  std::shared_ptr<const perf::CountingBackend> engine;
  CountingMode mode = CountingMode::perf;  // as chosen: perf or bpf
  std::string mode_reason = "configured";  // counting_mode.h's ChosenMode::reason
  // Other cgroup hierarchies as this process reaches them: where a configured root that is
  // missing from `root` may be instead (it then counts nothing, which is said).
  std::vector<std::filesystem::path> other_roots;
};

// A cgroup's directory, opened to name the cgroup to perf_event_open (PERF_FLAG_PID_CGROUP).
OrErrno<UniqueFd> open_cgroup(const std::filesystem::path& directory);
// `event` counted for the tasks of `cgroup` (and its descendants) while they run on `cpu`.
OrErrno<UniqueFd> open_cgroup_counter(const perf::EventEncoding& event, const UniqueFd& cgroup,
                                      unsigned cpu);
// `events` as one kernel group, counted likewise (the kernel allows no inherit here).
OrErrno<perf::CounterGroup> open_cgroup_group(const std::vector<perf::EventEncoding>& events,
                                              const UniqueFd& cgroup, unsigned cpu);

// The counter layout of `plan`'s units on `cpus`, the one every cgroup's counter set shares.
std::shared_ptr<const perf::CounterLayout> counter_layout(const perf::CountingPlan& plan,
                                                          const std::vector<HardwareThread>& cpus);

// In bpf mode, the `cgroup` label of the counts of cgroups that ran and were removed before a
// rescan could name them (container_id and pod_uid empty): summed in one series rather than
// dropped, so that a sum over cgroups is the node's container time, and labelled as what it is.
inline constexpr const char* kRemovedBeforeDiscovery = "(removed before discovery)";

// What became of a configured root at the last rescan.
enum class ConfiguredRootState { counting, missing, no_leaf, not_in_perf_event_hierarchy };

class CgroupCollector final : public Collector, public ConfiguredFamilies, public PreparedText {
 public:
  explicit CgroupCollector(CgroupCollectorSettings settings);
  ~CgroupCollector() override;  // where Text is complete

  std::string name() const override { return "cgroup"; }
  void collect(std::vector<prometheus::MetricFamily>& out) override;
  // collect()'s bytes, the cgroups' series from text prepared when the set of cgroups last
  // changed (a rescan), so that a scrape writes their values only.
  void collect_text(std::string& out, ExpositionFormat format) override;
  std::vector<FamilyDeclaration> declared_families() const override;

  // Walks the hierarchy once: opens the counters of cgroups that appeared, closes those of
  // cgroups that went away (an open event keeps a removed cgroup dying). The background thread
  // calls it every rescan interval, the constructor once, so the first scrape already counts.
  void rescan();
  const std::vector<perf::CountedEvent>& events() const { return settings_.events; }
  const std::vector<std::string>& group_lines() const { return settings_.group_lines; }
  // How the cgroups are counted and why (collectors.cgroup.mode), as --check-config says it.
  std::string mode_line() const {
    return std::string("counting mode: ") + to_string(settings_.mode) + " (" +
           settings_.mode_reason + ")";
  }
  // Why nothing is counted on this node, "" when containers are counted.
  const std::string& unavailable() const { return settings_.unavailable; }

 private:
  // A cgroup's counters: every unit on every CPU, for the cgroup (one member of its set).
  struct Counted {
    CgroupIdentity identity;
    std::unique_ptr<perf::CounterSet> counters;
    perf::CounterSet::Member member = 0;
  };
  struct Families;
  // One cgroup's counts, read at a scrape (the values summed from a derived preset's terms).
  struct CgroupRead {
    const CgroupIdentity* identity = nullptr;
    perf::CounterTotals totals;
    std::vector<std::uint64_t> values;
  };
  // The cgroups' families as text made once per set of cgroups (collectors/prepared_family.h).
  struct Text;
  // Opens one cgroup's counters on the CPUs online now: errno of the first failure, nothing
  // kept then.
  int open(const std::string& relative, Counted& counted);
  // In bpf mode, the counters of the cgroups removed before discovery, under the hierarchy's
  // root (kRemovedBeforeDiscovery), counted from the start.
  void open_removed_before_discovery();
  // Reads the online file; reopens every cgroup's counters on the CPUs that came back.
  void follow_hotplug();
  // The cgroups of `scan` not counted yet, opened; why some could not be, in `problems`.
  std::map<std::string, Counted> open_new(const CgroupScan& scan,
                                          std::map<std::string, std::string>& problems);
  // The text of the cgroups counted after this rescan (those `wanted` already counted, and
  // `opened`), or null when they are those counted now.
  std::unique_ptr<Text> next_text(const std::set<std::string>& wanted,
                                  const std::map<std::string, Counted>& opened) const;
  // What became of each configured root at this scan, logged where it changed.
  std::vector<ConfiguredRootState> root_states(const CgroupScan& scan) const;
  void log_root_states(const std::vector<ConfiguredRootState>& states);
  // Every cgroup's counters read once, in counted_'s order, their failed reads counted (under
  // mutex_).
  std::vector<CgroupRead> read_all();
  // The families of one scrape (export_families.cpp), from the reads of every cgroup.
  void add_available(Families& families) const;
  void add_cgroup(Families& families, const CgroupRead& read) const;
  void add_status(Families& families, std::size_t open_counters) const;
  // What the backend gave to no cgroup (bpf mode: CountingBackend::unattributed), per counts
  // family, and the switches it missed.
  void add_unattributed(Families& families, const perf::CountingBackend::Unattributed& lost) const;
  // The cgroups' series, a family at a time, through `text`.
  void write_cgroups(std::string& out, ExpositionFormat format, const Text& text,
                     const std::vector<CgroupRead>& reads) const;
  // The text of the series of `identities` (counted_'s order), made outside the scrapes' lock.
  std::unique_ptr<Text> prepare_text(const std::vector<const CgroupIdentity*>& identities) const;

  CgroupCollectorSettings settings_;
  perf::CountingPlan plan_;                            // the ungrouped events, then the groups
  std::shared_ptr<const perf::CounterLayout> layout_;  // plan_'s units on settings_.cpus
  std::vector<std::regex> match_;
  // The CPUs' counters summed per package, or over the machine (settings_.granularity).
  std::vector<events::CounterSeries> series_;

  std::mutex mutex_;                        // everything below, between scrapes and rescans
  std::map<std::string, Counted> counted_;  // changed by a rescan only, under mutex_
  std::uint64_t read_errors_ = 0;
  std::size_t left_out_over_cap_ = 0;
  std::map<std::string, std::string> open_problems_;  // cgroup -> why its counters did not open
  std::vector<ConfiguredRootState> root_states_;
  std::vector<bool> online_;                   // per settings_.cpus index
  std::unique_ptr<Text> text_;                 // counted_'s series, prepared
  std::array<std::string, 2> available_text_;  // per ExpositionFormat; constant

  std::mutex rescan_mutex_;  // one rescan at a time; guards the log-once state below
  bool cap_logged_ = false;
  std::optional<PeriodicThread> rescanner_;  // last: stopped before the members it uses go
};

// Builds the collector from the configuration (cgroup_factory.cpp): the perf_event hierarchy
// found (read only, nothing mounted), events resolved like the process targets', and one cgroup
// event opened at startup so that a missing privilege is an error before serving, with the
// remedy.
std::unique_ptr<CgroupCollector> make_cgroup_collector(const Config& config,
                                                       const Topology& topology,
                                                       const events::PresetCatalog& presets);

}  // namespace hwperf::cgroup
