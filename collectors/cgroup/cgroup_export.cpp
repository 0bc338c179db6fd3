// What a scrape exports of the containers (cgroup_collector.h): the families of collect(), and
// collect_text()'s same bytes with the cgroups' series written from text prepared when the set of
// cgroups last changed, a rescan's work, so that a scrape of hundreds of containers writes their
// values only. The few status samples go through families on both paths.
#include <utility>

#include "collectors/cgroup/cgroup_collector.h"
#include "collectors/cgroup/cgroup_families.h"
#include "collectors/metrics.h"
#include "collectors/prepared_family.h"

namespace hwperf::cgroup {
namespace {

constexpr EnumName<ConfiguredRootState> kRootStateNames[] = {
    {ConfiguredRootState::counting, "counting"},
    {ConfiguredRootState::missing, "missing"},
    {ConfiguredRootState::no_leaf, "no_leaf"},
    {ConfiguredRootState::not_in_perf_event_hierarchy, "not_in_perf_event_hierarchy"},
};

}  // namespace

std::vector<FamilyDeclaration> CgroupCollector::declared_families() const {
  std::vector<FamilyDeclaration> declared;
  for (const auto& family : plan_.families) declared.push_back({family.name, family.where});
  return declared;
}

void CgroupCollector::add_available(Families& families) const {
  if (settings_.unavailable.empty()) {
    add_gauge(families.available, {{"reason", ""}}, 1.0);
    return;
  }
  // The label keeps the reason; the remedy after it is in the log.
  add_gauge(families.available,
            {{"reason", settings_.unavailable.substr(0, settings_.unavailable.find("; "))}}, 0.0);
}

std::vector<CgroupCollector::CgroupRead> CgroupCollector::read_all() {
  std::vector<CgroupRead> reads;
  reads.reserve(counted_.size());
  for (const auto& [path, counted] : counted_) {
    CgroupRead read;
    read.identity = &counted.identity;
    read.totals = counted.counters->read();
    for (const int error : read.totals.errors) read_errors_ += error != 0 ? 1 : 0;
    read.values = perf::value_totals(plan_, read.totals.counts, settings_.cpus.size());
    reads.push_back(std::move(read));
  }
  return reads;
}

void CgroupCollector::add_cgroup(Families& families, const CgroupRead& read) const {
  const std::size_t cpus = settings_.cpus.size();
  const CgroupIdentity& id = *read.identity;
  const Labels identity = {
      {"container_id", id.container_id}, {"pod_uid", id.pod_uid}, {"cgroup", id.cgroup}};
  for (std::size_t value = 0; value < plan_.events(); ++value) {
    Labels labels = identity;
    perf::add_group_label(labels, plan_.values[value]);
    events::add_series(families.counts[plan_.values[value].family], series_, read.values,
                       value * cpus, plan_.values[value].unit, labels);
  }
  for (std::size_t unit = 0; unit < plan_.units.size(); ++unit) {
    if (plan_.units[unit].group.empty()) continue;
    Labels labels = identity;
    labels.emplace_back("group", plan_.units[unit].group);
    events::add_series(families.group_enabled, series_, read.totals.enabled_ns, unit * cpus,
                       events::Unit::nanoseconds, labels);
    events::add_series(families.group_running, series_, read.totals.running_ns, unit * cpus,
                       events::Unit::nanoseconds, labels);
  }
}

void CgroupCollector::add_unattributed(Families& families,
                                       const perf::CountingBackend::Unattributed& lost) const {
  families.engine = true;
  const std::size_t cpus = settings_.cpus.size();
  const auto values = perf::value_totals(plan_, lost.counts, cpus);
  for (std::size_t value = 0; value < plan_.events(); ++value) {
    Labels labels;
    perf::add_group_label(labels, plan_.values[value]);
    events::add_series(families.unattributed[plan_.values[value].family], series_, values,
                       value * cpus, plan_.values[value].unit, labels);
  }
  add_counter(families.missed_switches, {}, lost.missed_switches);
}

void CgroupCollector::add_status(Families& families, std::size_t open_counters) const {
  add_gauge(families.cgroups, {},
            static_cast<double>(counted_.size() - counted_.count(kRemovedBeforeDiscovery)));
  add_gauge(families.left_out, {{"reason", "over_cap"}}, static_cast<double>(left_out_over_cap_));
  add_gauge(families.left_out, {{"reason", "open_failed"}},
            static_cast<double>(open_problems_.size()));
  add_gauge(families.descriptors, {},
            static_cast<double>(open_counters + settings_.backend->shared_descriptors()));
  add_gauge(families.counting_mode,
            {{"mode", to_string(settings_.mode)}, {"reason", settings_.mode_reason}}, 1.0);
  add_counter(families.read_errors, {}, read_errors_);
  if (const auto lost = settings_.backend->unattributed()) add_unattributed(families, *lost);
  for (std::size_t i = 0; i < settings_.configured.roots.size(); ++i) {
    for (const auto& entry : kRootStateNames) {
      add_gauge(families.root_state,
                {{"root", "/" + settings_.configured.roots[i].path}, {"state", entry.name}},
                entry.value == root_states_[i] ? 1.0 : 0.0);
    }
  }
  add_gauge(families.hierarchy,
            {{"version", settings_.hierarchy.kind == PerfEventHierarchy::Kind::v2 ? "v2" : "v1"},
             {"mount_point", settings_.hierarchy.mount_point}},
            1.0);
}

void CgroupCollector::collect(std::vector<prometheus::MetricFamily>& out) {
  Families families(plan_);
  add_available(families);
  out.push_back(std::move(families.available));
  if (!settings_.unavailable.empty()) return;
  std::lock_guard lock(mutex_);
  std::size_t open_counters = 0;
  for (const auto& read : read_all()) {
    add_cgroup(families, read);
    open_counters += read.totals.descriptors;
  }
  add_status(families, open_counters);
  for (auto& family : families.counts) out.push_back(std::move(family));
  if (!settings_.groups.empty()) {
    out.push_back(std::move(families.group_enabled));
    out.push_back(std::move(families.group_running));
  }
  families.append_status(out, !settings_.configured.roots.empty());
}

std::unique_ptr<CgroupCollector::Text> CgroupCollector::prepare_text(
    const std::vector<const CgroupIdentity*>& identities) const {
  Families shape(plan_);
  CgroupRead zeros;
  zeros.totals.enabled_ns.assign(layout_->units.size() * layout_->slots(), 0);
  zeros.totals.running_ns = zeros.totals.enabled_ns;
  zeros.values.assign(plan_.events() * settings_.cpus.size(), 0);
  for (const CgroupIdentity* identity : identities) {
    zeros.identity = identity;
    add_cgroup(shape, zeros);
  }
  auto text = std::make_unique<Text>();
  for (const auto& family : shape.counts) text->counts.emplace_back(family);
  if (!settings_.groups.empty()) {
    text->group_enabled.emplace(shape.group_enabled);
    text->group_running.emplace(shape.group_running);
  }
  return text;
}

void CgroupCollector::write_cgroups(std::string& out, ExpositionFormat format, const Text& text,
                                    const std::vector<CgroupRead>& reads) const {
  const std::size_t cpus = settings_.cpus.size();
  // Its series in add_cgroup's order: cgroup by cgroup, value by value.
  perf::write_counter_families(
      plan_, text.counts, series_, cpus,
      reads.size(), [&reads](std::size_t cgroup) -> const auto& { return reads[cgroup].values; },
      out, format);
  if (settings_.groups.empty()) return;
  for (const auto& [prepared, running] :
       {std::pair{&*text.group_enabled, false}, std::pair{&*text.group_running, true}}) {
    PreparedFamily::Writer writer(*prepared, out, format);
    writer.open();
    std::size_t at = 0;
    for (const auto& read : reads) {
      for (std::size_t unit = 0; unit < plan_.units.size(); ++unit) {
        if (plan_.units[unit].group.empty()) continue;
        at = events::write_series(writer, at, series_,
                                  running ? read.totals.running_ns : read.totals.enabled_ns,
                                  unit * cpus, events::Unit::nanoseconds);
      }
    }
  }
}

void CgroupCollector::collect_text(std::string& out, ExpositionFormat format) {
  out += available_text_[static_cast<std::size_t>(format)];
  if (!settings_.unavailable.empty()) return;
  Families status(plan_);
  std::lock_guard lock(mutex_);
  const auto reads = read_all();
  write_cgroups(out, format, *text_, reads);
  std::size_t open_counters = 0;
  for (const auto& read : reads) open_counters += read.totals.descriptors;
  add_status(status, open_counters);
  std::vector<prometheus::MetricFamily> families;
  status.append_status(families, !settings_.configured.roots.empty());
  append_families(out, families, format);
}

}  // namespace hwperf::cgroup
