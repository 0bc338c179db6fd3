// The configuration section of a collector that counts events for targets it finds (process
// targets, containers): collectors.<name> with its `enabled`, then its `events:` and `groups:`
// (event_keys.h counting_keys), then the collector's own keys. Included by the collectors'
// settings readers only, beside config/schema_keys.h.
#pragma once

#include <string>

#include "collectors/events/event_keys.h"
#include "config/schema_keys.h"

namespace hwperf::events {

// `settings` has the members every such collector's settings have: enabled, events,
// events_given, groups and groups_given.
template <typename Settings>
config_schema::Key counting_section(yaml_reader::Problems& problems, const std::string& name,
                                    Settings& settings, const config_schema::Section& keys) {
  return config_schema::collector_section(
      problems, name, settings.enabled,
      {counting_keys(problems, "collectors." + name, settings.events, settings.events_given,
                     settings.groups, settings.groups_given),
       keys});
}

}  // namespace hwperf::events
