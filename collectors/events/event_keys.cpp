// The events and groups of a configuration file, read and dumped (event_keys.h). What a group
// means, the built-in ones and the formulas are groups.h's; here only the shape is read and
// checked.
#include "collectors/events/event_keys.h"

#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "config/schema_keys.h"
#include "config/yaml_reader.h"

namespace hwperf::events {

using namespace yaml_reader;
using config_schema::Key;
using config_schema::valid_metric_base;

namespace {

// libpfm4 event names are a few dozen characters; PAPI copies names into fixed buffers (an
// 8 KiB name overflows one inside libpapi 7.0), so nothing longer reaches it.
constexpr std::size_t kMaxEventNameLength = 1024;

}  // namespace

bool read_event_item(Problems& problems, const YAML::Node& item, const std::string& item_path,
                     EventSpec& event) {
  event.mark = problems.where(item.Mark());
  if (item.IsScalar()) {
    event.event = item.as<std::string>();
  } else if (item.IsMap()) {
    Mapping(problems, item_path)
        .on("event", read_nonempty_string(problems, item_path + ".event", event.event))
        .on("metric", read_string(problems, item_path + ".metric", event.metric))
        .on("help", read_string(problems, item_path + ".help", event.help))
        .visit(item);
    if (!item["event"].IsDefined()) {
      problems.add(item.Mark(), item_path + ": missing required key \"event\"");
    }
  } else {
    problems.add(item.Mark(), item_path + ": expected an event name or {event, metric, help}");
    return false;
  }
  if (item.IsScalar() && event.event.empty()) {
    problems.add(item.Mark(), item_path +
                                  ": an empty event name; name an event (papi_avail and "
                                  "papi_native_avail list those of this machine)");
    return false;
  }
  if (const auto control = control_character(event.event)) {
    problems.add(item.Mark(), item_path + ": the event name holds a control character (" +
                                  *control + "); an event name is one line of printable text");
    return false;
  }
  if (event.event.size() > kMaxEventNameLength) {
    problems.add(item.Mark(), item_path + ": an event name of " +
                                  std::to_string(event.event.size()) +
                                  " characters; PAPI event "
                                  "names are at most " +
                                  std::to_string(kMaxEventNameLength));
    return false;
  }
  if (!event.metric.empty() && !valid_metric_base(event.metric)) {
    problems.add(item.Mark(), item_path + ".metric: \"" + event.metric +
                                  "\" is not a valid metric name part (use [a-z_][a-z0-9_]*)");
  }
  return !event.event.empty();
}

namespace {

void read_event_list(Problems& problems, const YAML::Node& node, const std::string& path,
                     std::vector<EventSpec>& events, bool& events_given) {
  events_given = true;
  events.clear();
  if (!node.IsSequence()) {
    problems.add(problems.at(node),
                 path + ": expected a list of event names or {event, metric, help}");
    return;
  }
  if (node.size() == 0) {
    problems.add(problems.at(node), path +
                                        ": the list is empty; name at least one event, or remove "
                                        "the key for the default set (or set enabled: false)");
    return;
  }
  std::size_t index = 0;
  for (const auto& item : node) {
    EventSpec event;
    if (read_event_item(problems, item, path + "[" + std::to_string(index++) + "]", event)) {
      events.push_back(std::move(event));
    }
  }
}

void dump_events(YAML::Emitter& out, const std::vector<EventSpec>& events) {
  out << YAML::BeginSeq;
  for (const auto& event : events) {
    if (event.metric.empty() && event.help.empty()) {
      out << event.event;
      continue;
    }
    out << YAML::BeginMap << YAML::Key << "event" << YAML::Value << event.event;
    if (!event.metric.empty()) out << YAML::Key << "metric" << YAML::Value << event.metric;
    if (!event.help.empty()) out << YAML::Key << "help" << YAML::Value << event.help;
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
}

// A formula is a line of arithmetic; a longer one is a mistake, not a metric.
constexpr std::size_t kMaxExpressionLength = 1024;

// Each entry of a mapping keyed by names ([a-z_][a-z0-9_]*) of `what` (a formula name, a group
// name): `each` gets the name, its path under `path` and the entry. A key that is no such name
// is a problem, and its entry is left out; anything but a mapping (or an empty one, unless
// `empty_allowed`) is one problem saying what is `expected`.
void for_each_named(
    Problems& problems, const YAML::Node& node, const std::string& path,
    const std::string& expected, bool empty_allowed, const std::string& what,
    const std::function<void(const std::string& name, const std::string& item_path,
                             const YAML::Node& key, const YAML::Node& value)>& each) {
  if (!node.IsMap() || (!empty_allowed && node.size() == 0)) {
    problems.add(problems.at(node), path + ": expected " + expected);
    return;
  }
  for (const auto& entry : node) {
    if (!entry.first.IsScalar()) {
      problems.add(entry.first.Mark(), path + ": keys must be plain names");
      continue;
    }
    const std::string name = entry.first.as<std::string>();
    const std::string item_path = path + "." + name;
    if (!valid_metric_base(name)) {
      problems.add(entry.first.Mark(),
                   item_path + ": \"" + name + "\" is not a " + what + " (use [a-z_][a-z0-9_]*)");
      continue;
    }
    each(name, item_path, entry.first, entry.second);
  }
}

void read_group_events(Problems& problems, const YAML::Node& node, const std::string& path,
                       std::vector<GroupEventConfig>& events) {
  const std::string expected =
      "a mapping of formula names to events, such as {ins: PAPI_TOT_INS, cyc: PAPI_TOT_CYC}";
  for_each_named(problems, node, path, expected, false, "formula name",
                 [&](const std::string& name, const std::string& item_path, const YAML::Node&,
                     const YAML::Node& value) {
                   GroupEventConfig event;
                   event.variable = name;
                   if (read_event_item(problems, value, item_path, event.event)) {
                     events.push_back(std::move(event));
                   }
                 });
}

void read_group_metrics(Problems& problems, const YAML::Node& node, const std::string& path,
                        std::vector<GroupMetricConfig>& metrics) {
  for_each_named(problems, node, path, "a mapping of metric names to {expr, help}", true,
                 "valid metric name part",
                 [&](const std::string& name, const std::string& item_path, const YAML::Node&,
                     const YAML::Node& value) {
                   GroupMetricConfig metric;
                   metric.name = name;
                   metric.mark = problems.where(value.Mark());
                   Mapping(problems, item_path)
                       .on("expr", read_nonempty_string(problems, item_path + ".expr", metric.expr))
                       .on("help", read_string(problems, item_path + ".help", metric.help))
                       .visit(value);
                   if (!value["expr"].IsDefined()) {
                     problems.add(value.Mark(), item_path + ": missing required key \"expr\"");
                     return;
                   }
                   for (const std::string* text : {&metric.expr, &metric.help}) {
                     if (const auto control = control_character(*text)) {
                       problems.add(value.Mark(),
                                    item_path + ": holds a control character (" + *control + ")");
                     }
                   }
                   if (metric.expr.size() > kMaxExpressionLength) {
                     problems.add(value.Mark(), item_path + ".expr: longer than " +
                                                    std::to_string(kMaxExpressionLength) +
                                                    " characters");
                     return;
                   }
                   if (!metric.expr.empty()) metrics.push_back(std::move(metric));
                 });
}

// One group of the top-level groups: (its name checked): {events, metrics}.
void read_group(Problems& problems, const std::string& name, const std::string& path,
                const YAML::Node& key, const YAML::Node& value, std::vector<GroupConfig>& groups) {
  GroupConfig group;
  group.name = name;
  group.mark = problems.where(key.Mark());
  Mapping(problems, path)
      .on("events",
          [&](const YAML::Node& events) {
            read_group_events(problems, events, path + ".events", group.events);
          })
      .on("metrics",
          [&](const YAML::Node& metrics) {
            read_group_metrics(problems, metrics, path + ".metrics", group.metrics);
          })
      .visit(value);
  if (!value.IsMap() || !value["events"].IsDefined()) {
    problems.add(value.Mark(), path + ": missing required key \"events\"");
    return;
  }
  groups.push_back(std::move(group));
}

void dump_groups(YAML::Emitter& out, const std::vector<GroupConfig>& groups) {
  out << YAML::BeginMap;
  for (const auto& group : groups) {
    out << YAML::Key << group.name << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "events" << YAML::Value << YAML::BeginMap;
    for (const auto& event : group.events) {
      out << YAML::Key << event.variable << YAML::Value;
      if (event.event.metric.empty() && event.event.help.empty()) {
        out << event.event.event;
        continue;
      }
      out << YAML::BeginMap << YAML::Key << "event" << YAML::Value << event.event.event;
      if (!event.event.metric.empty()) {
        out << YAML::Key << "metric" << YAML::Value << event.event.metric;
      }
      if (!event.event.help.empty()) out << YAML::Key << "help" << YAML::Value << event.event.help;
      out << YAML::EndMap;
    }
    out << YAML::EndMap;
    if (!group.metrics.empty()) {
      out << YAML::Key << "metrics" << YAML::Value << YAML::BeginMap;
      for (const auto& metric : group.metrics) {
        out << YAML::Key << metric.name << YAML::Value << YAML::BeginMap;
        out << YAML::Key << "expr" << YAML::Value << YAML::DoubleQuoted << metric.expr;
        if (!metric.help.empty()) out << YAML::Key << "help" << YAML::Value << metric.help;
        out << YAML::EndMap;
      }
      out << YAML::EndMap;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
}

}  // namespace

namespace {

Key event_list_key(Problems& problems, const std::string& path, std::vector<EventSpec>& events,
                   bool& events_given) {
  return {"events",
          [&problems, path, &events, &events_given](const YAML::Node& n) {
            read_event_list(problems, n, path, events, events_given);
          },
          [&events](YAML::Emitter& out) { dump_events(out, events); },
          [&events_given] { return events_given; }};
}

Key group_list_key(Problems& problems, const std::string& path, std::vector<GroupRef>& groups,
                   bool& groups_given) {
  return {"groups",
          [&problems, path, &groups, &groups_given](const YAML::Node& node) {
            groups_given = true;
            groups.clear();
            if (!node.IsSequence()) {
              problems.add(problems.at(node),
                           path +
                               ": expected a list of group names (built-in, or defined under "
                               "the top-level groups:)");
              return;
            }
            std::set<std::string> seen;
            for (const auto& item : node) {
              GroupRef ref;
              read_nonempty_string(problems, path, ref.name)(item);
              ref.mark = problems.where(item.Mark());
              if (ref.name.empty()) continue;
              if (!seen.insert(ref.name).second) {
                problems.add(item.Mark(), path + ": group \"" + ref.name + "\" is listed twice");
                continue;
              }
              groups.push_back(std::move(ref));
            }
          },
          [&groups](YAML::Emitter& out) {
            out << YAML::Flow << YAML::BeginSeq;
            for (const auto& group : groups) out << group.name;
            out << YAML::EndSeq;
          },
          [&groups_given] { return groups_given; }};
}

}  // namespace

std::vector<Key> counting_keys(Problems& problems, const std::string& path,
                               std::vector<EventSpec>& events, bool& events_given,
                               std::vector<GroupRef>& groups, bool& groups_given) {
  return {event_list_key(problems, path + ".events", events, events_given),
          group_list_key(problems, path + ".groups", groups, groups_given)};
}

Key groups_section(Problems& problems, std::vector<GroupConfig>& groups) {
  return {"groups",
          [&problems, &groups](const YAML::Node& node) {
            groups.clear();
            if (!node || node.IsNull()) return;
            for_each_named(problems, node, "groups",
                           "a mapping of group names to {events, metrics}", true, "group name",
                           [&](const std::string& name, const std::string& path,
                               const YAML::Node& key, const YAML::Node& value) {
                             read_group(problems, name, path, key, value, groups);
                           });
          },
          [&groups](YAML::Emitter& out) { dump_groups(out, groups); },
          [&groups] { return !groups.empty(); }};
}

}  // namespace hwperf::events
