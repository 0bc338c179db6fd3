#include "collectors/uncore/uncore_collector.h"

#include <array>
#include <cerrno>
#include <map>
#include <mutex>
#include <set>
#include <utility>

#include "collectors/metrics.h"
#include "collectors/perf/perf_event.h"
#include "common/log.h"
#include "common/text.h"

namespace hwperf::uncore {
namespace {

struct OpenedCounter {
  PlannedCounter planned;
  std::size_t handle = 0;
  Labels labels;  // of its series; counters with equal labels are summed (boxes of a package)
};

struct FamilySpec {
  Quantity quantity;
  const char* name;  // after "hwperf_", before "_total"
  const char* help;
};

const FamilySpec kFamilies[] = {
    {Quantity::memory_read, "memory_read_bytes",
     "Bytes read from memory by the package's memory controllers (IMC or UMC CAS commands, or "
     "Grace SCF read beats, times the bytes each moves) since the exporter started."},
    {Quantity::memory_write, "memory_write_bytes",
     "Bytes written to memory by the package's memory controllers since the exporter started."},
    {Quantity::memory_total, "memory_bytes",
     "Bytes read from and written to memory by the package's memory controllers, where they "
     "count reads and writes together (Arm CMN home nodes' memory requests, DMC-620 read and "
     "write commands, times 64 bytes each), since the exporter started."},
    {Quantity::aperf, "msr_aperf_cycles",
     "Actual performance cycles (APERF: the clock the CPU really ran at, only while not idle) "
     "since the exporter started."},
    {Quantity::mperf, "msr_mperf_cycles",
     "Maximum performance cycles (MPERF: at the TSC rate, only while not idle) since the exporter "
     "started; rate(aperf) / rate(mperf) * TSC rate is the effective clock."},
    {Quantity::tsc, "msr_tsc_cycles",
     "Time stamp counter cycles since the exporter started: its rate is the TSC frequency."},
    {Quantity::cstate_core, "cstate_core_residency_cycles",
     "TSC cycles the core spent in the C-state `state` (cstate_core PMU) since the exporter "
     "started; divided by the rate of hwperf_msr_tsc_cycles_total, the share of time."},
    {Quantity::cstate_package, "cstate_package_residency_cycles",
     "TSC cycles the package spent in the package C-state `state` (cstate_pkg PMU) since the "
     "exporter started."},
};

// The labels of a counter's series: what it is summed over is what it does not name.
Labels labels_of(const PlannedCounter& counter) {
  const std::string package = std::to_string(counter.package);
  switch (counter.quantity) {
    case Quantity::memory_read:
    case Quantity::memory_write:
    case Quantity::memory_total: return {{"package", package}};
    case Quantity::aperf:
    case Quantity::mperf:
    // Per-CPU series carry their package too, so that rules sum them per package without a join
    // (the family has as many series either way).
    case Quantity::tsc: return {{"cpu", std::to_string(counter.cpu)}, {"package", package}};
    case Quantity::cstate_core:
      return {
          {"core", std::to_string(counter.core)}, {"package", package}, {"state", counter.state}};
    case Quantity::cstate_package: return {{"package", package}, {"state", counter.state}};
  }
  return {};
}

std::string open_problem(const PlannedCounter& counter, int error, const std::string& procfs) {
  std::string what = "perf_event_open(" + counter.encoding.name + ", cpu " +
                     std::to_string(counter.cpu) + "): " + errno_text(error);
  if (error == EACCES || error == EPERM) {
    what += ": a system-wide event " +
            perf::system_wide_permission_remedy(perf::paranoid_setting(procfs));
  }
  return what;
}

class UncoreCollector final : public Collector, public ConstantFamilies {
 public:
  UncoreCollector(std::vector<OpenedCounter> counters, const std::vector<SourceState>& sources,
                  std::unique_ptr<CounterBackend> backend, ResctrlSource resctrl,
                  double peak_memory_bytes_per_second)
      : counters_(std::move(counters)),
        backend_(std::move(backend)),
        resctrl_(std::move(resctrl.counters)) {
    for (const FamilySpec& spec : kFamilies) {
      templates_[static_cast<std::size_t>(spec.quantity)] =
          make_counter_family({spec.name}, spec.help);
    }
    auto available = make_gauge_family(
        {"uncore", "source", "available"},
        "Whether the collector counts this source (1) or not (0), with the PMU and the reason: "
        "ok, absent (no such PMU or event in sysfs), permission_denied, open_failed, unusable, "
        "not_mounted (resctrl). "
        "The log says how to fix it.");
    for (const SourceState& state : sources) {
      add_gauge(
          available,
          {{"source", source_name(state.quantity)}, {"pmu", state.pmu}, {"reason", state.reason}},
          state.reason == kReasonOk ? 1.0 : 0.0);
    }
    add_gauge(available, {{"source", "resctrl"}, {"pmu", "resctrl"}, {"reason", resctrl.reason}},
              resctrl.reason == kReasonOk ? 1.0 : 0.0);
    constant_.push_back(std::move(available));
    if (peak_memory_bytes_per_second > 0) add_peak_family(peak_memory_bytes_per_second);
  }

  std::string name() const override { return "uncore"; }

  void collect_constant(std::vector<prometheus::MetricFamily>& out) const override {
    out.insert(out.end(), constant_.begin(), constant_.end());
  }

  void collect(std::vector<prometheus::MetricFamily>& out) override {
    // Per quantity, the total per label set; a label set with a failed read is left out of this
    // scrape rather than exported short of a box.
    std::array<std::map<Labels, std::uint64_t>, kQuantityCount> totals;
    std::array<std::set<Labels>, kQuantityCount> failed;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      for (const OpenedCounter& counter : counters_) {
        const auto index = static_cast<std::size_t>(counter.planned.quantity);
        const auto reading = backend_->read(counter.handle);
        if (!reading.ok()) {
          if (failed[index].insert(counter.labels).second) {
            log::warn("uncore: reading " + counter.planned.encoding.name + " on cpu " +
                      std::to_string(counter.planned.cpu) + ": " + errno_text(reading.error));
          }
          continue;
        }
        // Unsigned 64-bit arithmetic until the sample: a CAS count times 64 bytes overflows only
        // after 2^58 commands.
        totals[index][counter.labels] += reading.value * counter.planned.bytes_per_count;
      }
      resctrl_families_.collect(resctrl_, out);
    }
    for (const FamilySpec& spec : kFamilies) {
      const auto index = static_cast<std::size_t>(spec.quantity);
      prometheus::MetricFamily family = templates_[index];
      for (const auto& [labels, total] : totals[index]) {
        if (failed[index].count(labels) == 0) add_counter(family, labels, total);
      }
      append_unless_empty(out, std::move(family));
    }
  }

 private:
  // Only where memory traffic is counted: a share of the peak needs both.
  void add_peak_family(double bytes_per_second) {
    std::set<std::string> packages;
    for (const OpenedCounter& counter : counters_) {
      const Quantity quantity = counter.planned.quantity;
      if (quantity == Quantity::memory_read || quantity == Quantity::memory_total) {
        packages.insert(std::to_string(counter.planned.package));
      }
    }
    auto peak = make_gauge_family(
        {"memory", "peak", "bytes", "per", "second"},
        "What the package's memory can move per second, as configured "
        "(collectors.uncore.peak_memory_bytes_per_second): the denominator of the share of peak "
        "bandwidth in use.");
    for (const std::string& package : packages) {
      add_gauge(peak, {{"package", package}}, bytes_per_second);
    }
    append_unless_empty(constant_, std::move(peak));
  }

  std::vector<OpenedCounter> counters_;
  std::unique_ptr<CounterBackend> backend_;
  std::vector<ResctrlCounter> resctrl_;
  ResctrlFamilies resctrl_families_;
  std::array<prometheus::MetricFamily, kQuantityCount> templates_;  // names and HELP, no samples
  std::vector<prometheus::MetricFamily> constant_;
  std::mutex mutex_;  // scrapes overlap; one reads the counters at a time
};

}  // namespace

std::unique_ptr<Collector> make_uncore_collector(UncorePlan plan,
                                                 std::unique_ptr<CounterBackend> backend,
                                                 const std::string& procfs_root,
                                                 ResctrlSource resctrl,
                                                 double peak_memory_bytes_per_second) {
  std::vector<OpenedCounter> opened;
  for (SourceState& state : plan.sources) {
    if (state.reason != kReasonOk) continue;
    std::vector<OpenedCounter> mine;
    for (const PlannedCounter& counter : plan.counters) {
      if (counter.quantity != state.quantity) continue;
      const auto handle = backend->open(counter.encoding, counter.cpu);
      if (!handle.ok()) {
        state.reason =
            handle.error == EACCES || handle.error == EPERM ? kReasonPermission : kReasonOpenFailed;
        state.detail = open_problem(counter, handle.error, procfs_root);
        // Those already opened for it stay with the backend, unread, until the exporter exits.
        mine.clear();
        break;
      }
      mine.push_back({counter, handle.value, labels_of(counter)});
    }
    opened.insert(opened.end(), mine.begin(), mine.end());
  }
  for (const SourceState& state : plan.sources) {
    if (state.reason == kReasonOk) continue;
    if (state.counted_otherwise) {
      log::info(std::string("uncore: ") + source_name(state.quantity) +
                " not counted apart: " + state.detail);
      continue;
    }
    log::warn(std::string("uncore: not counting ") + source_name(state.quantity) + " (" +
              state.reason + "): " + state.detail);
  }
  if (resctrl.reason != kReasonOk) {
    log::warn("uncore: not counting resctrl (" + resctrl.reason + "): " + resctrl.detail);
  }
  return std::make_unique<UncoreCollector>(std::move(opened), plan.sources, std::move(backend),
                                           std::move(resctrl), peak_memory_bytes_per_second);
}

}  // namespace hwperf::uncore
