#include "collectors/collector_entry.h"

#include <prometheus/metric_family.h>

#include "collectors/events/event_specs.h"

namespace hwperf {

std::vector<FamilyDeclaration> exported_families(const Collector& collector) {
  std::vector<FamilyDeclaration> families = collector.declared_families();
  std::vector<prometheus::MetricFamily> constant;
  collector.collect_constant(constant);
  for (const auto& family : constant) families.push_back({family.name, ""});
  return families;
}

std::vector<FamilyDeclaration> configured_families(const std::vector<PapiEventConfig>& events,
                                                   std::string_view level) {
  std::vector<events::EventSpec> specs;
  std::vector<std::string> refused;  // said again, with the rest, when the events are resolved
  for (const auto& event : events) {
    events::EventSpec spec;
    spec.event = event.event;
    spec.where = event.mark.line != 0 ? event.mark.to_string() : "";
    spec.metric = events::metric_base_of(event, spec.where, refused);
    if (!spec.metric.empty()) specs.push_back(std::move(spec));
  }
  events::name_families(specs, level);
  std::vector<FamilyDeclaration> families;
  for (const auto& spec : specs) {
    if (!spec.family.empty()) families.push_back({spec.family, spec.where});
  }
  return families;
}

}  // namespace hwperf
