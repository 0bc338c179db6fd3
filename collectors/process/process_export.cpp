// What a scrape exports of the process targets (process_collector.h): collect()'s families,
// ?target='s for some targets, and collect_text()'s same bytes with the counts' and times'
// series written from text made once (the targets are configured, their series fixed), so that
// a scrape writes their values only. The status and the processes go through families on both
// paths; so do the regions, whose series come and go with the measured program's.
#include <algorithm>
#include <iterator>
#include <string>
#include <utility>

#include "collectors/events/emission.h"
#include "collectors/process/process_families.h"

namespace hwperf::process {
namespace {

// The help of hwperf_process_{event,group}_{enabled,running}_seconds_total.
const char* const kUnitTimeHelp[2][2] = {
    {"Time the kernel had each ungrouped event enabled for the target's threads, summed over "
     "threads. Below enabled, running time means the event was multiplexed: counts are then "
     "scaled by running/enabled of each scrape interval.",
     "Time each ungrouped event was really on a hardware counter for the target's threads; "
     "rate(running) / rate(enabled) is the share counted, 1 unless multiplexed."},
    {"Time the kernel had each event group enabled for the target's threads, summed over "
     "threads. Below enabled, running time means the group was multiplexed: all its counts are "
     "then scaled by the group's one running/enabled of each scrape interval.",
     "Time each event group was really on the counters, all its events together, for the "
     "target's threads; rate(running) / rate(enabled) is the share counted, 1 unless "
     "multiplexed."}};

// hwperf_process_target_state's help: the states as kTargetStateNames spells them, in its order,
// with what the less obvious ones mean.
std::string target_state_help() {
  const std::pair<TargetState, const char*> meanings[] = {
      {TargetState::no_process, "nothing selected: no such process, exited, unreadable pidfile"},
      {TargetState::ended,
       "the process a pid target or experiment mode's command names has ended, and all it "
       "started: the counts are final"}};
  std::string help = "1 for the target's current state: ";
  const std::size_t states = std::size(kTargetStateNames);
  for (std::size_t i = 0; i < states; ++i) {
    if (i > 0) help += i + 1 == states ? " or " : ", ";
    help += kTargetStateNames[i].name;
    for (const auto& [state, meaning] : meanings) {
      if (state == kTargetStateNames[i].value) help += std::string(" (") + meaning + ")";
    }
  }
  return help + "; the log says why and what to do.";
}

}  // namespace

ProcessCollector::Families::Families(const perf::CountingPlan& plan)
    : counts(perf::counter_families(plan)),
      read_errors(make_counter_family({"process", "read", "errors"},
                                      "Counter reads that failed for the target; their interval "
                                      "is not counted.")),
      state(make_gauge_family({"process", "target", "state"}, target_state_help())),
      info(make_gauge_family({"process", "info"},
                             "1 per live process a target counts: the ones it names and "
                             "everything they started after counting began.")),
      processes(make_gauge_family({"process", "processes"}, "Live processes the target counts.")),
      threads(make_gauge_family({"process", "threads"},
                                "Threads of the live processes the target counts.")),
      descriptors(make_gauge_family({"process", "open_counters"},
                                    "Perf event descriptors the target holds open.")) {
  for (std::size_t unit = 0; unit < 2; ++unit) {
    for (std::size_t which = 0; which < 2; ++which) {
      times[unit][which] = make_counter_family(
          {"process", unit == 0 ? "event" : "group", which == 0 ? "enabled" : "running", "seconds"},
          kUnitTimeHelp[unit][which]);
    }
  }
}

std::vector<FamilyDeclaration> ProcessCollector::declared_families() const {
  std::vector<FamilyDeclaration> declared;
  for (const auto& family : plan_.families) declared.push_back({family.name, family.where});
  return declared;
}

std::vector<std::string> ProcessCollector::target_names() const {
  std::vector<std::string> names;
  for (const auto& target : settings_.targets) names.push_back(target.name);
  return names;
}

void ProcessCollector::collect(std::vector<prometheus::MetricFamily>& out) {
  collect_targets(out, {});
}

std::vector<std::uint64_t> ProcessCollector::target_totals(const std::string& name) {
  std::vector<std::uint64_t> sums(settings_.events.size(), 0);
  for (auto& target : targets_) {
    if (target->plan.config().name != name) continue;
    const TargetRead read = read_target(*target);
    const std::size_t slots = layout_->slots();
    for (std::size_t event = 0; event < sums.size(); ++event) {
      for (std::size_t slot = 0; slot < slots; ++slot) {
        sums[event] += read.values[event * slots + slot];
      }
    }
  }
  return sums;
}

ProcessCollector::TargetRead ProcessCollector::read_target(Target& target) const {
  TargetRead read;
  read.name = &target.plan.config().name;
  read.totals = target.counting.read();
  read.values = perf::value_totals(plan_, read.totals.counts, layout_->slots());
  return read;
}

// Per CPU, an event is enabled while its thread runs anywhere but runs only on its own CPU: the
// kernel's two times cannot tell multiplexing from time spent on other CPUs there, so the times
// are exported only for a target counted wherever it runs; a group's only where there are groups.
std::size_t ProcessCollector::time_families() const {
  if (!settings_.cpus.empty()) return 0;
  return settings_.groups.empty() ? 1 : 2;
}

void ProcessCollector::add_counts(Families& families, const TargetRead& read) const {
  const std::size_t slots = layout_->slots();
  for (std::size_t value = 0; value < plan_.events(); ++value) {
    Labels labels = {{"target", *read.name}};
    perf::add_group_label(labels, plan_.values[value]);
    events::add_series(families.counts[plan_.values[value].family], slot_series_, read.values,
                       value * slots, plan_.values[value].unit, labels);
  }
  for (std::size_t unit = 0; unit < plan_.units.size() && settings_.cpus.empty(); ++unit) {
    const auto& group = plan_.units[unit].group;
    const Labels labels = {
        {"target", *read.name},
        group.empty() ? Labels::value_type{"event", plan_.values[plan_.units[unit].value].event}
                      : Labels::value_type{"group", group}};
    auto& unit_times = families.times[group.empty() ? 0 : 1];
    add_counter(unit_times[0], labels, nanoseconds_to_seconds(read.totals.enabled_ns[unit]));
    add_counter(unit_times[1], labels, nanoseconds_to_seconds(read.totals.running_ns[unit]));
  }
}

void ProcessCollector::add_status(Families& families, Target& target, const TargetRead& read,
                                  std::optional<region::RegionFamilies>& regions) {
  const std::string& name = *read.name;
  add_counter(families.read_errors, {{"target", name}}, read.totals.read_errors);
  add_gauge(families.descriptors, {{"target", name}}, static_cast<double>(read.totals.descriptors));
  // Before the status lock, which the rescan takes: a segment is read holding none of it.
  if (target.regions) regions->add(name, target.regions->read(), target.regions->own());
  std::lock_guard lock(target.status_mutex);
  for (const auto& entry : kTargetStateNames) {
    add_gauge(families.state, {{"target", name}, {"state", entry.name}},
              entry.value == target.state ? 1.0 : 0.0);
  }
  for (const auto& process : target.counted) {
    add_gauge(
        families.info,
        {{"target", name}, {"pid", std::to_string(process.identity.pid)}, {"comm", process.comm}},
        1.0);
  }
  add_gauge(families.processes, {{"target", name}}, static_cast<double>(target.counted.size()));
  add_gauge(families.threads, {{"target", name}}, static_cast<double>(target.threads));
}

std::optional<region::RegionFamilies> ProcessCollector::region_families() const {
  std::optional<region::RegionFamilies> regions;
  for (const auto& target : targets_) {
    if (target->regions) regions.emplace(settings_.region_events, settings_.cpus);
  }
  return regions;
}

void ProcessCollector::append_domain(std::vector<prometheus::MetricFamily>& out) const {
  if (settings_.domain_note.empty()) return;
  auto domain = make_gauge_family({"process", "domain", "narrowed"},
                                  "1 when the process targets count less than configured; reason "
                                  "says why (kernel-mode counts need privileges this exporter "
                                  "lacks).");
  add_gauge(domain, {{"domain", to_string(settings_.domain)}, {"reason", settings_.domain_note}},
            1.0);
  out.push_back(std::move(domain));
}

void ProcessCollector::collect_targets(std::vector<prometheus::MetricFamily>& out,
                                       const std::vector<std::string>& names) {
  Families families(plan_);
  std::optional<region::RegionFamilies> regions = region_families();
  for (auto& target : targets_) {
    const std::string& name = target->plan.config().name;
    if (!names.empty() && std::find(names.begin(), names.end(), name) == names.end()) continue;
    const TargetRead read = read_target(*target);
    add_counts(families, read);
    add_status(families, *target, read, regions);
  }
  if (regions) regions->append_to(out);
  for (auto& family : families.counts) out.push_back(std::move(family));
  for (std::size_t unit = 0; unit < time_families(); ++unit) {
    for (auto& family : families.times[unit]) out.push_back(std::move(family));
  }
  families.append_status(out);
  append_domain(out);
}

void ProcessCollector::prepare_text() {
  Families shape(plan_);
  TargetRead zeros;
  zeros.totals.enabled_ns.assign(layout_->units.size() * layout_->slots(), 0);
  zeros.totals.running_ns = zeros.totals.enabled_ns;
  zeros.values.assign(plan_.events() * layout_->slots(), 0);
  for (const auto& target : targets_) {
    zeros.name = &target->plan.config().name;
    add_counts(shape, zeros);
  }
  text_ = std::make_unique<Text>();
  for (const auto& family : shape.counts) text_->counts.emplace_back(family);
  for (std::size_t unit = 0; unit < time_families(); ++unit) {
    text_->times.push_back(
        {PreparedFamily(shape.times[unit][0]), PreparedFamily(shape.times[unit][1])});
  }
}

void ProcessCollector::write_counts(std::string& out, ExpositionFormat format,
                                    const std::vector<TargetRead>& reads) const {
  const std::size_t slots = layout_->slots();
  // Its series in add_counts' order: target by target, value by value.
  perf::write_counter_families(
      plan_, text_->counts, slot_series_, slots,
      reads.size(), [&reads](std::size_t target) -> const auto& { return reads[target].values; },
      out, format);
  for (std::size_t kind = 0; kind < text_->times.size(); ++kind) {
    for (std::size_t which = 0; which < 2; ++which) {
      PreparedFamily::Writer writer(text_->times[kind][which], out, format);
      writer.open();
      std::size_t at = 0;
      for (const auto& read : reads) {
        for (std::size_t unit = 0; unit < plan_.units.size(); ++unit) {
          if (plan_.units[unit].group.empty() != (kind == 0)) continue;
          const auto& times = which == 0 ? read.totals.enabled_ns : read.totals.running_ns;
          writer.sample(at++, events::sample_value(times[unit], events::Unit::nanoseconds));
        }
      }
    }
  }
}

void ProcessCollector::collect_text(std::string& out, ExpositionFormat format) {
  Families status(plan_);
  std::optional<region::RegionFamilies> regions = region_families();
  std::vector<TargetRead> reads;
  for (auto& target : targets_) {
    reads.push_back(read_target(*target));
    add_status(status, *target, reads.back(), regions);
  }
  std::vector<prometheus::MetricFamily> families;
  if (regions) regions->append_to(families);
  append_families(out, families, format);
  write_counts(out, format, reads);
  families.clear();
  status.append_status(families);
  append_domain(families);
  append_families(out, families, format);
}

}  // namespace hwperf::process
