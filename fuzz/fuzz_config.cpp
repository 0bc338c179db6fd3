// libFuzzer target: the YAML configuration loader must turn any input into a Config or a
// ConfigError, and the dump of a loaded config must load again. A configuration that loads also
// goes through the checks the start and --check-config run before building anything (family
// names across collectors, from the configured events and groups) and through --print-rules'
// formulas, which take the user's group expressions.
#include <cstddef>
#include <cstdint>
#include <string>

#include "collectors/events/rules.h"
#include "collectors/registry.h"
#include "config/errors.h"
#include "collectors/configuration.h"
#include "exporter/cli.h"
#include "topology/topology.h"

namespace {

const hwperf::Topology& fuzz_topology() {
  // Loaded once: two packages, so that per-package levels have more than one value.
  static const hwperf::Topology topology = [] {
    hwperf::TopologyConfig source;
    source.kind = hwperf::TopologyConfig::Kind::synthetic;
    source.argument = "pack:2 core:2 pu:2";
    return hwperf::Topology::load(source);
  }();
  return topology;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const hwperf::Config config = hwperf::parse_config_text(text, "fuzz.yml");
    // What --check-config prints is itself a valid configuration.
    hwperf::parse_config_text(hwperf::dump_config(config), "dump.yml");
    hwperf::check_family_names(config, fuzz_topology());
    (void)hwperf::events::rule_file(hwperf::collector_rule_scopes(config), hwperf::kRuleWindow);
  } catch (const hwperf::ConfigError&) {
  }
  return 0;
}
