// The collector half of the PAPI collector: turns a CounterSource's raw per-(event, CPU) counts
// into families. Everything that can be decided at startup is: family names and HELP, which
// counters feed which series and with which labels, and the status families (dropped counters,
// event sets). A scrape takes one lock, reads every counter once, and builds samples.
#include "collectors/papi/papi_collector.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <tuple>

#include "collectors/metrics.h"
#include "collectors/papi/papi_events.h"
#include "common/cpu_list.h"
#include "config/errors.h"
#include "topology/topology.h"

namespace hwperf {
namespace {

using papi::CounterSource;
using papi::EventSpec;
using papi::Unit;

const char* domain_text(CountingDomain domain) {
  switch (domain) {
    case CountingDomain::user:
      return "user mode only";
    case CountingDomain::kernel:
      return "kernel mode only";
    case CountingDomain::all:
      return "user and kernel mode";
  }
  return "user and kernel mode";
}

const char* level_text(Granularity granularity) {
  switch (granularity) {
    case Granularity::cpu:
      return "per CPU (hardware thread)";
    case Granularity::core:
      return "summed over the counted hardware threads of each core";
    case Granularity::package:
      return "summed over the counted CPUs of each package";
    case Granularity::machine:
      return "summed over all counted CPUs";
  }
  return "per CPU (hardware thread)";
}

// What the event counts in: its own u/k qualifiers win over the configured domain (see
// cpu_qualified_name), so perf::CYCLES:u is user mode only whatever collectors.papi.domain says.
std::string event_domain_text(const EventSpec& event, CountingDomain configured) {
  const auto own = papi::qualified_domain(event.event);
  if (!own) return domain_text(configured);
  const std::string levels = own->user && own->kernel ? domain_text(CountingDomain::all)
                             : own->user              ? domain_text(CountingDomain::user)
                             : own->kernel            ? domain_text(CountingDomain::kernel)
                                                      : "neither user nor kernel mode";
  return levels + " (set by the event's own u/k qualifiers)";
}

std::string help_text(const EventSpec& event, const PapiCollectorConfig& config) {
  std::string help = event.description;
  if (!help.empty() && help.back() != '.') help += '.';
  help += " PAPI event " + event.event;
  if (!event.counted_as.empty() && event.counted_as != event.event) {
    help += " (counted as " + event.counted_as + ")";
  }
  help += ", counted system-wide (every process) in " +
          event_domain_text(event, config.domain) + ", " + level_text(config.granularity) + ".";
  if (event.unit == Unit::nanoseconds) help += " Seconds, converted from the event's nanoseconds.";
  return help;
}

// A counter's label values; numa_node is empty when the machine reports none, which Prometheus
// treats as the label being absent.
Labels cpu_labels(const HardwareThread& thread) {
  return {{"cpu", std::to_string(thread.cpu)},
          {"core", std::to_string(thread.core)},
          {"package", std::to_string(thread.package)},
          {"numa_node", thread.numa_node < 0 ? std::string() : std::to_string(thread.numa_node)}};
}

// Nanoseconds to seconds without losing the sub-second part once the count passes 2^53 ns
// (about 104 days of CPU time, which a machine-wide sum reaches quickly).
double nanoseconds_to_seconds(std::uint64_t ns) {
  return static_cast<double>(ns / 1000000000u) + static_cast<double>(ns % 1000000000u) * 1e-9;
}

// Built for every PAPI collector, counting or not, so an alert can tell "PAPI cannot count on
// this machine" from "the exporter has no PAPI collector".
prometheus::MetricFamily availability_family(const std::string& reason) {
  auto family = make_family(
      metric_name({"papi", "available"}),
      "1 when PAPI can count CPU events on this machine, else 0; reason is ok, or why not "
      "(unknown_cpu: libpfm4 does not know this CPU; permission_denied; no_perf_event; "
      "forced_pmu_unknown; component_disabled; init_failed). The startup log says what to do.",
      prometheus::MetricType::Gauge);
  add_gauge(family, {{"reason", reason}}, reason == "ok" ? 1.0 : 0.0);
  return family;
}

class UnavailablePapiCollector final : public Collector {
 public:
  explicit UnavailablePapiCollector(const std::string& reason)
      : status_(availability_family(reason)) {}
  std::string name() const override { return "papi"; }
  void collect(std::vector<prometheus::MetricFamily>& out) override { out.push_back(status_); }

 private:
  const prometheus::MetricFamily status_;
};

struct Series {
  Labels labels;
  std::vector<std::size_t> counters;  // indices into the source layout, summed
};

struct EventFamily {
  std::string name;
  std::string help;
  Unit unit = Unit::count;
  std::vector<Series> series;
};

class PapiCollector final : public Collector {
 public:
  PapiCollector(const PapiCollectorConfig& config, const std::vector<EventSpec>& events,
                const Topology& topology, std::unique_ptr<CounterSource> source)
      : source_(std::move(source)) {
    if (!source_) throw std::invalid_argument("papi collector: no counter source");
    const auto& layout = source_->layout();
    raw_.assign(layout.counters.size(), 0);
    last_.assign(layout.counters.size(), 0);
    // Specs from resolve_event_specs are named already; naming again is cheap and covers
    // sources built directly (tests), through the same one function.
    std::vector<EventSpec> named = events;
    if (auto problems = papi::name_families(named, config.granularity); !problems.empty()) {
      throw ConfigError(std::move(problems));
    }
    build_event_families(config, named, topology);
    build_status_families(named);
  }

  std::string name() const override { return "papi"; }

  void collect(std::vector<prometheus::MetricFamily>& out) override {
    std::vector<std::uint64_t> values;
    {
      // One lock for the whole read: overlapping scrapes must not interleave reads of one
      // event set, and the guard below must see each reading in order.
      std::lock_guard<std::mutex> lock(mutex_);
      source_->read(raw_);
      // Multiplexed counts are scaled estimates and can come out lower than the previous
      // estimate; a Prometheus counter must never decrease, so each counter keeps its highest
      // reading. Unscaled counts only grow, so for them this changes nothing.
      for (std::size_t i = 0; i < raw_.size(); ++i) {
        if (raw_[i] > last_[i]) last_[i] = raw_[i];
      }
      values = last_;
    }
    for (const auto& event : families_) {
      auto family = make_family(event.name, event.help, prometheus::MetricType::Counter);
      for (const auto& series : event.series) {
        std::uint64_t sum = 0;
        for (std::size_t index : series.counters) sum += values[index];
        if (event.unit == Unit::nanoseconds) {
          add_counter(family, series.labels, nanoseconds_to_seconds(sum));
        } else {
          add_counter(family, series.labels, sum);
        }
      }
      out.push_back(std::move(family));
    }
    for (const auto& family : status_) out.push_back(family);
  }

 private:
  void build_event_families(const PapiCollectorConfig& config, const std::vector<EventSpec>& events,
                            const Topology& topology) {
    const auto& counters = source_->layout().counters;
    // Group each event's counters into series at the configured level; std::map keeps series
    // in label order, so the exposition is stable from scrape to scrape.
    using Key = std::tuple<unsigned, unsigned, unsigned>;
    std::vector<std::map<Key, Series>> grouped(events.size());
    for (std::size_t i = 0; i < counters.size(); ++i) {
      const auto& counter = counters[i];
      if (counter.event >= events.size()) {
        throw std::invalid_argument("papi collector: source counts event #" +
                                    std::to_string(counter.event) + " of " +
                                    std::to_string(events.size()));
      }
      const HardwareThread* thread = topology.find(counter.cpu);
      if (thread == nullptr) {
        throw std::invalid_argument("papi collector: source counts CPU " +
                                    std::to_string(counter.cpu) + ", not in the topology");
      }
      Key key;
      Labels labels;
      switch (config.granularity) {
        case Granularity::cpu:
          key = {thread->cpu, 0, 0};
          labels = cpu_labels(*thread);
          break;
        case Granularity::core:
          key = {thread->package, thread->core, 0};
          labels = {{"core", std::to_string(thread->core)},
                    {"package", std::to_string(thread->package)}};
          break;
        case Granularity::package:
          key = {thread->package, 0, 0};
          labels = {{"package", std::to_string(thread->package)}};
          break;
        case Granularity::machine:
          key = {0, 0, 0};
          break;
      }
      auto& series = grouped[counter.event][key];
      if (series.counters.empty()) series.labels = std::move(labels);
      series.counters.push_back(i);
    }

    for (std::size_t e = 0; e < events.size(); ++e) {
      // An event counted nowhere exports no family: an empty family would suggest a series
      // that can never exist. hwperf_papi_event_dropped says why.
      if (grouped[e].empty()) continue;
      EventFamily family;
      family.name = events[e].family;
      family.help = help_text(events[e], config);
      family.unit = events[e].unit;
      for (auto& entry : grouped[e]) family.series.push_back(std::move(entry.second));
      families_.push_back(std::move(family));
    }
  }

  // These only change at startup, so they are built once and copied into every scrape.
  void build_status_families(const std::vector<EventSpec>& events) {
    const auto& layout = source_->layout();
    status_.push_back(availability_family("ok"));
    auto info = make_family(
        metric_name({"papi", "event", "info"}),
        "1 per configured PAPI event: the family it is exported as (metric), the event as "
        "configured, and the event PAPI counts (counted_as: the kernel's generic event for a "
        "preset this PAPI does not define on this CPU).",
        prometheus::MetricType::Gauge);
    for (const auto& event : events) {
      add_gauge(info,
                {{"metric", event.family},
                 {"event", event.event},
                 {"counted_as", event.counted_as.empty() ? event.event : event.counted_as}},
                1.0);
    }
    status_.push_back(std::move(info));
    if (!layout.dropped.empty()) {
      auto dropped = make_family(
          metric_name({"papi", "event", "dropped"}),
          "How many CPUs a PAPI event could not be opened on at startup (not retried), per event "
          "and PAPI's reason; cpus lists them. The startup log names the remedy.",
          prometheus::MetricType::Gauge);
      // One series per event and reason, not per CPU: on a 512-CPU machine without a PMU a
      // dropped event would otherwise be 512 series saying the same thing.
      std::map<std::pair<std::size_t, std::string>, std::vector<unsigned>> grouped;
      for (const auto& drop : layout.dropped) grouped[{drop.event, drop.reason}].push_back(drop.cpu);
      for (auto& [key, cpus] : grouped) {
        const auto& [index, reason] = key;
        const std::string event =
            index < events.size() ? events[index].event : std::to_string(index);
        std::sort(cpus.begin(), cpus.end());
        cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
        add_gauge(dropped, {{"event", event}, {"reason", reason}, {"cpus", format_cpu_list(cpus)}},
                  static_cast<double>(cpus.size()));
      }
      status_.push_back(std::move(dropped));
    }
    auto multiplexed = make_family(
        metric_name({"papi", "event", "set", "multiplexed"}),
        "1 if the PAPI event set time-shares the hardware counters (its counts are scaled "
        "estimates), else 0; per CPU and event set.",
        prometheus::MetricType::Gauge);
    auto size = make_family(
        metric_name({"papi", "event", "set", "events"}),
        "Number of events counted by the PAPI event set, per CPU and event set; binding is "
        "cpu_attach (PAPI_CPU_ATTACH) or qualifier (per-CPU event qualifiers).",
        prometheus::MetricType::Gauge);
    for (const auto& set : layout.event_sets) {
      const std::string cpu = std::to_string(set.cpu);
      const std::string index = std::to_string(set.index);
      add_gauge(multiplexed, {{"cpu", cpu}, {"event_set", index}}, set.multiplexed ? 1.0 : 0.0);
      add_gauge(size, {{"cpu", cpu}, {"event_set", index}, {"binding", set.binding}},
                static_cast<double>(set.counters.size()));
    }
    if (!layout.event_sets.empty()) {
      status_.push_back(std::move(multiplexed));
      status_.push_back(std::move(size));
    }
  }

  std::unique_ptr<CounterSource> source_;
  std::vector<EventFamily> families_;
  std::vector<prometheus::MetricFamily> status_;
  std::mutex mutex_;
  std::vector<std::uint64_t> raw_;   // guarded by mutex_: the latest raw reading
  std::vector<std::uint64_t> last_;  // guarded by mutex_: the highest reading so far
};

}  // namespace

std::unique_ptr<Collector> make_papi_unavailable_collector(const std::string& reason) {
  return std::make_unique<UnavailablePapiCollector>(reason);
}

std::unique_ptr<Collector> make_papi_collector_from_source(
    const PapiCollectorConfig& config, std::vector<papi::EventSpec> events,
    const Topology& topology, std::unique_ptr<papi::CounterSource> source) {
  return std::make_unique<PapiCollector>(config, events, topology, std::move(source));
}

}  // namespace hwperf
