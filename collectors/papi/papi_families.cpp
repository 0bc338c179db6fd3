#include "collectors/papi/papi_families.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "collectors/metrics.h"
#include "common/cpu_list.h"
#include "common/enum_names.h"

namespace hwperf::papi {
namespace {

using events::ExportedEvent;
using events::Unit;

// What the HELP text says of a domain and of a level.
constexpr EnumName<CountingDomain> kDomainTexts[] = {{CountingDomain::all, "user and kernel mode"},
                                                     {CountingDomain::user, "user mode only"},
                                                     {CountingDomain::kernel, "kernel mode only"}};
constexpr EnumName<Granularity> kLevelTexts[] = {
    {Granularity::cpu, "per CPU (hardware thread)"},
    {Granularity::core, "summed over the counted hardware threads of each core"},
    {Granularity::package, "summed over the counted CPUs of each package"},
    {Granularity::machine, "summed over all counted CPUs"}};

const char* domain_text(CountingDomain domain) { return name_of(kDomainTexts, domain); }

// What the event counts in: its own u/k qualifiers win over the configured domain (see
// cpu_qualified_name), so perf::CYCLES:u is user mode only whatever collectors.papi.domain says.
std::string event_domain_text(const ExportedEvent& event, CountingDomain configured) {
  const auto own = events::qualified_domain(event.event);
  if (!own) return domain_text(configured);
  const std::string levels = own->user && own->kernel ? domain_text(CountingDomain::all)
                             : own->user              ? domain_text(CountingDomain::user)
                             : own->kernel            ? domain_text(CountingDomain::kernel)
                                                      : "neither user nor kernel mode";
  return levels + " (set by the event's own u/k qualifiers)";
}

std::string help_text(const ExportedEvent& event, const PapiCollectorConfig& config) {
  std::string help = event.description;
  if (!help.empty() && help.back() != '.') help += '.';
  help += " PAPI event " + event.event;
  if (!event.counted_as.empty() && event.counted_as != event.event) {
    help += " (counted as " + event.counted_as + ")";
  }
  help += ", counted system-wide (every process) in " + event_domain_text(event, config.domain) +
          ", " + name_of(kLevelTexts, config.granularity) + ".";
  if (event.unit == Unit::nanoseconds) help += " Seconds, converted from the event's nanoseconds.";
  return help;
}

// hwperf_papi_event_dropped: one series per event and reason, not per CPU: on a 512-CPU
// machine without a PMU a dropped event would otherwise be 512 series saying the same thing.
prometheus::MetricFamily dropped_event_family(const std::vector<ExportedEvent>& events,
                                              const SourceLayout& layout) {
  auto dropped = make_gauge_family(
      {"papi", "event", "dropped"},
      "How many CPUs a PAPI event could not be opened on at startup (not retried), per event "
      "and PAPI's reason; cpus lists them. The startup log names the remedy.");
  std::map<std::pair<std::size_t, std::string>, std::vector<unsigned>> grouped;
  for (const auto& drop : layout.dropped) grouped[{drop.event, drop.reason}].push_back(drop.cpu);
  for (auto& [key, cpus] : grouped) {
    const auto& [index, reason] = key;
    const std::string event = index < events.size() ? events[index].event : std::to_string(index);
    std::sort(cpus.begin(), cpus.end());
    cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
    add_gauge(dropped, {{"event", event}, {"reason", reason}, {"cpus", format_cpu_list(cpus)}},
              static_cast<double>(cpus.size()));
  }
  return dropped;
}

prometheus::MetricFamily dropped_group_family(const std::vector<DroppedGroup>& groups) {
  auto family = make_gauge_family(
      {"papi", "group", "dropped"},
      "1 per default event group this machine cannot count (decided once at startup): the "
      "member that cannot be counted, the event whose reason is given (the first of its events "
      "this machine has) and why. The startup log and --check-config give the whole reason.");
  for (const auto& group : groups) {
    add_gauge(family,
              {{"group", group.name},
               {"member", group.member},
               {"event", group.event},
               {"reason", group.reason}},
              1.0);
  }
  return family;
}

}  // namespace

std::vector<EventFamily> event_families(const PapiCollectorConfig& config,
                                        const std::vector<ExportedEvent>& events,
                                        const std::vector<std::string>& group_of,
                                        const Topology& topology, const SourceLayout& layout) {
  // Each event's counters, and the CPU each counts on, in layout order.
  std::vector<std::vector<std::size_t>> counters_of(events.size());
  std::vector<std::vector<HardwareThread>> threads_of(events.size());
  for (std::size_t i = 0; i < layout.counters.size(); ++i) {
    const auto& counter = layout.counters[i];
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
    counters_of[counter.event].push_back(i);
    threads_of[counter.event].push_back(*thread);
  }
  std::vector<EventFamily> families;
  std::map<std::string, std::size_t> by_name;  // family name -> index in families
  for (std::size_t e = 0; e < events.size(); ++e) {
    if (counters_of[e].empty()) continue;
    const auto [it, added] = by_name.emplace(events[e].family, families.size());
    if (added) {
      EventFamily family;
      family.name = events[e].family;
      family.help = events[e].event.empty() ? events[e].description : help_text(events[e], config);
      family.unit = events[e].unit;
      families.push_back(std::move(family));
    }
    auto series = events::series_at_level(config.granularity, threads_of[e]);
    // series_at_level numbers the event's own counters; the collector sums layout counters.
    for (auto& one : series) {
      for (auto& slot : one.slots) slot = counters_of[e][slot];
      if (e < group_of.size() && !group_of[e].empty())
        one.labels.emplace_back("group", group_of[e]);
    }
    auto& family = families[it->second];
    family.series.insert(family.series.end(), series.begin(), series.end());
  }
  return families;
}

// Built for every PAPI collector, counting or not, so an alert can tell "PAPI cannot count on
// this machine" from "the exporter has no PAPI collector".
prometheus::MetricFamily availability_family(const std::string& reason) {
  auto family = make_gauge_family(
      {"papi", "available"},
      "1 when PAPI can count CPU events on this machine, else 0; reason is ok, or why not "
      "(unknown_cpu: libpfm4 does not know this CPU; permission_denied; no_perf_event; "
      "forced_pmu_unknown; component_disabled; init_failed). The startup log says what to do.");
  add_gauge(family, {{"reason", reason}}, reason == "ok" ? 1.0 : 0.0);
  return family;
}

std::vector<prometheus::MetricFamily> status_families(
    const std::vector<ExportedEvent>& events, std::size_t configured, const SourceLayout& layout,
    const std::vector<DroppedGroup>& dropped_groups) {
  std::vector<prometheus::MetricFamily> out;
  out.push_back(availability_family("ok"));
  auto info = make_gauge_family(
      {"papi", "event", "info"},
      "1 per configured PAPI event: the family it is exported as (metric), the event as "
      "configured, and the event PAPI counts (counted_as: the kernel's generic event for a "
      "preset this PAPI does not define on this CPU).");
  for (std::size_t e = 0; e < configured && e < events.size(); ++e) {
    const auto& event = events[e];
    add_gauge(info,
              {{"metric", event.family},
               {"event", event.event},
               {"counted_as", event.counted_as.empty() ? event.event : event.counted_as}},
              1.0);
  }
  out.push_back(std::move(info));
  if (!layout.dropped.empty()) out.push_back(dropped_event_family(events, layout));
  if (!dropped_groups.empty()) out.push_back(dropped_group_family(dropped_groups));
  auto multiplexed = make_gauge_family(
      {"papi", "event", "set", "multiplexed"},
      "1 if the PAPI event set time-shares the hardware counters (its counts are scaled "
      "estimates), else 0; per CPU and event set.");
  auto size = make_gauge_family(
      {"papi", "event", "set", "events"},
      "Number of events counted by the PAPI event set, per CPU and event set; binding is "
      "cpu_attach (PAPI_CPU_ATTACH), qualifier (per-CPU event qualifiers), perf (the perf "
      "backend, events beyond the counters) or perf_group (one kernel group of a configured "
      "event group).");
  for (const auto& set : layout.event_sets) {
    const std::string cpu = std::to_string(set.cpu);
    const std::string index = std::to_string(set.index);
    add_gauge(multiplexed, {{"cpu", cpu}, {"event_set", index}}, set.multiplexed ? 1.0 : 0.0);
    add_gauge(size, {{"cpu", cpu}, {"event_set", index}, {"binding", set.binding}},
              static_cast<double>(set.counters.size() - (set.kernel_group ? 2 : 0)));
  }
  if (!layout.event_sets.empty()) {
    out.push_back(std::move(multiplexed));
    out.push_back(std::move(size));
  }
  return out;
}

}  // namespace hwperf::papi
