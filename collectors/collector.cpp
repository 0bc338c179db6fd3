#include "collectors/collector.h"

namespace hwperf {

Capabilities capabilities_of(Collector& collector) {
  Capabilities found;
  found.constant = dynamic_cast<const ConstantFamilies*>(&collector);
  found.text = dynamic_cast<PreparedText*>(&collector);
  found.targets = dynamic_cast<NamedTargets*>(&collector);
  found.configured = dynamic_cast<const ConfiguredFamilies*>(&collector);
  return found;
}

void collect_constant(Collector& collector, std::vector<prometheus::MetricFamily>& out) {
  if (const auto* constant = capabilities_of(collector).constant) constant->collect_constant(out);
}

void collect_text(Collector& collector, std::string& out, ExpositionFormat format) {
  if (auto* text = capabilities_of(collector).text) {
    text->collect_text(out, format);
    return;
  }
  std::vector<prometheus::MetricFamily> families;
  collector.collect(families);
  append_families(out, families, format);
}

std::vector<FamilyDeclaration> declared_families(Collector& collector) {
  const auto* configured = capabilities_of(collector).configured;
  return configured != nullptr ? configured->declared_families() : std::vector<FamilyDeclaration>{};
}

}  // namespace hwperf
