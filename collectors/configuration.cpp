#include "collectors/configuration.h"

#include "collectors/events/event_keys.h"
#include "collectors/registry.h"
#include "config/loader.h"

namespace hwperf {
namespace {

config_schema::Section collector_sections(yaml_reader::Problems& problems, Config& config) {
  config_schema::Section collectors;
  for (const CollectorEntry* entry : collector_registry()) {
    if (entry->settings != nullptr) collectors.push_back(entry->settings(problems, config));
  }
  return {config_schema::section(problems, "collectors", "collectors", std::move(collectors)),
          events::groups_section(problems, config.get<GroupsConfig>().groups)};
}

}  // namespace

Config load_config_file(const std::string& path) {
  return load_config_file(path, &collector_sections);
}

Config parse_config_text(const std::string& yaml_text, const std::string& file_name) {
  return parse_config_text(yaml_text, file_name, &collector_sections);
}

std::string dump_config(const Config& config) { return dump_config(config, &collector_sections); }

std::vector<ConfigKeyInfo> describe_config_keys() {
  return describe_config_keys(&collector_sections);
}

}  // namespace hwperf
