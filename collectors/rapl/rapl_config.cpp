#include "collectors/rapl/rapl_config.h"

#include "config/schema_keys.h"

namespace hwperf {
namespace {

using namespace yaml_reader;
using namespace config_schema;

// collectors.rapl.domains: a list of domain names, each one RAPL has; dumped only when given.
Key domains_key(Problems& problems, std::vector<RaplDomain>& domains) {
  const std::string path = "collectors.rapl.domains";
  const auto read = [&problems, &domains, path](const YAML::Node& node) {
    const std::string expected = "a list of " + join_names(kRaplDomainNames);
    if (!node.IsSequence()) {
      problems.add(problems.at(node), path + ": expected " + expected);
      return;
    }
    domains.clear();
    for (const auto& item : node) {
      if (!is_scalar(problems, item, path, expected)) continue;
      const auto name = item.as<std::string>();
      const auto domain = parse_name(kRaplDomainNames, name);
      if (!domain) {
        problems.add(item.Mark(), path + ": unknown domain \"" + name + "\" (expected one of " +
                                      join_names(kRaplDomainNames) + ")");
        continue;
      }
      domains.push_back(*domain);
    }
  };
  const auto dump = [&domains](YAML::Emitter& out) {
    out << YAML::Flow << YAML::BeginSeq;
    for (RaplDomain domain : domains) out << to_string(domain);
    out << YAML::EndSeq;
  };
  return {"domains", read, dump, [&domains] { return !domains.empty(); }};
}

}  // namespace

Key rapl_settings_keys(Problems& problems, Config& config) {
  auto& rapl = config.get<RaplCollectorConfig>();
  return collector_section(
      problems, "rapl", rapl.enabled,
      {{enum_key(problems, "interface", "collectors.rapl.interface", rapl.interface,
                 kRaplInterfaceNames),
        domains_key(problems, rapl.domains),
        // Below 1 W every real energy delta would be rejected as implausible.
        zero_or_between_key(problems, "max_power_watts", "collectors.rapl.max_power_watts",
                            rapl.max_power_watts, 1, kMaxPowerWatts, "from the hardware", "watt"),
        zero_or_between_key(problems, "wrap_guard_interval_seconds",
                            "collectors.rapl.wrap_guard_interval_seconds",
                            rapl.wrap_guard_interval_seconds, kMinWrapGuardIntervalSeconds,
                            kMaxWrapGuardIntervalSeconds, "derived", "seconds")}});
}

}  // namespace hwperf
