#include "collectors/papi/papi_config.h"

#include <stdexcept>

#include "collectors/events/event_keys.h"
#include "common/cpu_list.h"
#include "config/schema_keys.h"

namespace hwperf {
namespace {

using namespace yaml_reader;
using namespace config_schema;

void read_cpus(Problems& problems, const YAML::Node& node, CpuSelection& out) {
  const std::string path = "collectors.papi.cpus";
  const std::string expected = "\"all\" or a CPU list such as \"0-3,8\"";
  const auto text = marked_scalar(problems, node, path, expected, out.mark);
  if (!text) return;
  try {
    out.cpus = *text == "all" ? std::vector<unsigned>{} : parse_cpu_list(*text);
    out.all = *text == "all";
  } catch (const std::invalid_argument& e) {
    problems.add(problems.at(node), path + ": expected " + expected + ": " + e.what());
  }
}

}  // namespace

std::string CpuSelection::to_string() const { return all ? "all" : format_cpu_list(cpus); }

Key papi_settings_keys(Problems& problems, Config& config) {
  auto& papi = config.get<PapiCollectorConfig>();
  return collector_section(
      problems, "papi", papi.enabled,
      {{{"cpus", [&problems, &papi](const YAML::Node& n) { read_cpus(problems, n, papi.cpus); },
         [&papi](YAML::Emitter& out) { out << YAML::DoubleQuoted << papi.cpus.to_string(); }},
        enum_key(problems, "granularity", "collectors.papi.granularity", papi.granularity,
                 kGranularityNames),
        enum_key(problems, "domain", "collectors.papi.domain", papi.domain, kCountingDomainNames),
        enum_key(problems, "attach", "collectors.papi.attach", papi.attach, kPapiAttachModeNames),
        bool_key(problems, "multiplex", "collectors.papi.multiplex", papi.multiplex)},
       events::counting_keys(problems, "collectors.papi", papi.events, papi.events_given,
                             papi.groups, papi.groups_given)});
}

}  // namespace hwperf
