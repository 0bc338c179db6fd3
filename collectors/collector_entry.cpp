#include "collectors/collector_entry.h"

#include <set>
#include <string>

#include <prometheus/metric_family.h>

#include "collectors/events/event_specs.h"
#include "collectors/metrics.h"

namespace hwperf {

std::vector<FamilyDeclaration> exported_families(Collector& collector) {
  std::vector<FamilyDeclaration> families = declared_families(collector);
  std::vector<prometheus::MetricFamily> constant;
  collect_constant(collector, constant);
  for (const auto& family : constant) families.push_back({family.name, ""});
  return families;
}

std::vector<FamilyDeclaration> configured_families(
    const std::vector<EventSpec>& events, const std::vector<events::GroupDefinition>& groups,
    std::string_view level) {
  std::vector<events::ExportedEvent> specs;
  std::vector<std::string> refused;  // said again, with the rest, when the events are resolved
  for (const auto& event : events) {
    events::ExportedEvent spec;
    spec.event = event.event;
    spec.where = event.mark.line != 0 ? event.mark.to_string() : "";
    spec.metric = events::metric_base_of(event, spec.where, refused);
    if (!spec.metric.empty()) specs.push_back(std::move(spec));
  }
  events::name_families(specs, level);
  std::vector<FamilyDeclaration> families;
  std::set<std::string> declared;
  for (const auto& spec : specs) {
    if (!spec.family.empty() && declared.insert(spec.family).second) {
      families.push_back({spec.family, spec.where});
    }
  }
  for (const auto& group : groups) {
    for (const auto& member : group.members) {
      const std::string family = counter_name({level, member.metric});
      if (declared.insert(family).second) families.push_back({family, group.where});
    }
  }
  return families;
}

}  // namespace hwperf
