// How a configuration file writes events and groups (collectors/events/specs.h): a counting
// collector's `events:` and `groups:` lists, and the top-level `groups:` the user defines. Keys of
// the file's schema (config/schema_keys.h), which this header only names: the types of the file
// reader stay out of the events layer's headers.
#pragma once

#include <string>
#include <vector>

#include "collectors/events/specs.h"

namespace YAML {
class Node;
}

namespace hwperf {
namespace yaml_reader {
class Problems;
}
namespace config_schema {
struct Key;
}

namespace events {

// One event of an events list or a group: a name, or {event, metric, help}; the name checked as
// text (not empty, no control character, bounded). False, with a problem, when nothing usable
// was read.
bool read_event_item(yaml_reader::Problems& problems, const YAML::Node& item,
                     const std::string& item_path, EventSpec& event);

// A counting collector's (papi, process, cgroup) `events:` and `groups:` under `path`
// ("collectors.papi"): its list of events and its list of group names, each dumped only when the
// user gave it, so that the default set stays the code's.
std::vector<config_schema::Key> counting_keys(yaml_reader::Problems& problems,
                                              const std::string& path,
                                              std::vector<EventSpec>& events, bool& events_given,
                                              std::vector<GroupRef>& groups, bool& groups_given);

// The top-level groups: section, the user's groups.
config_schema::Key groups_section(yaml_reader::Problems& problems,
                                  std::vector<GroupConfig>& groups);

}  // namespace events
}  // namespace hwperf
