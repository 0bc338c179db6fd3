// Event groups in the schema: the top-level groups: section (the user's groups) and the groups:
// list of each counting collector. What a group means, the built-in ones and the formulas are
// the events layer's (collectors/events/groups.h); here only the shape is read and checked.
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "config/schema_keys.h"

namespace hwperf::config_schema {

using namespace yaml_reader;

namespace {

// A formula is a line of arithmetic; a longer one is a mistake, not a metric.
constexpr std::size_t kMaxExpressionLength = 1024;

void read_group_events(Problems& problems, const YAML::Node& node, const std::string& path,
                       std::vector<GroupEventConfig>& events) {
  if (!node.IsMap() || node.size() == 0) {
    problems.add(problems.at(node), path +
                                        ": expected a mapping of formula names to events, "
                                        "such as {ins: PAPI_TOT_INS, cyc: PAPI_TOT_CYC}");
    return;
  }
  for (const auto& entry : node) {
    if (!entry.first.IsScalar()) {
      problems.add(entry.first.Mark(), path + ": keys must be plain names");
      continue;
    }
    GroupEventConfig event;
    event.variable = entry.first.as<std::string>();
    const std::string item_path = path + "." + event.variable;
    if (!valid_metric_base(event.variable)) {
      problems.add(entry.first.Mark(), item_path + ": \"" + event.variable +
                                           "\" is not a formula name (use [a-z_][a-z0-9_]*)");
      continue;
    }
    if (read_event_item(problems, entry.second, item_path, event.event)) {
      events.push_back(std::move(event));
    }
  }
}

void read_group_metrics(Problems& problems, const YAML::Node& node, const std::string& path,
                        std::vector<GroupMetricConfig>& metrics) {
  if (!node.IsMap()) {
    problems.add(problems.at(node), path + ": expected a mapping of metric names to {expr, help}");
    return;
  }
  for (const auto& entry : node) {
    if (!entry.first.IsScalar()) {
      problems.add(entry.first.Mark(), path + ": keys must be plain names");
      continue;
    }
    GroupMetricConfig metric;
    metric.name = entry.first.as<std::string>();
    metric.mark = problems.where(entry.second.Mark());
    const std::string item_path = path + "." + metric.name;
    if (!valid_metric_base(metric.name)) {
      problems.add(entry.first.Mark(), item_path + ": \"" + metric.name +
                                           "\" is not a valid metric name part (use "
                                           "[a-z_][a-z0-9_]*)");
      continue;
    }
    Mapping(problems, item_path)
        .on("expr", read_nonempty_string(problems, item_path + ".expr", metric.expr))
        .on("help", read_string(problems, item_path + ".help", metric.help))
        .visit(entry.second);
    if (!entry.second["expr"].IsDefined()) {
      problems.add(entry.second.Mark(), item_path + ": missing required key \"expr\"");
      continue;
    }
    for (const std::string* text : {&metric.expr, &metric.help}) {
      if (const auto control = control_character(*text)) {
        problems.add(entry.second.Mark(),
                     item_path + ": holds a control character (" + *control + ")");
      }
    }
    if (metric.expr.size() > kMaxExpressionLength) {
      problems.add(entry.second.Mark(), item_path + ".expr: longer than " +
                                            std::to_string(kMaxExpressionLength) + " characters");
      continue;
    }
    if (!metric.expr.empty()) metrics.push_back(std::move(metric));
  }
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

Key groups_section(Problems& problems, std::vector<GroupConfig>& groups) {
  return {"groups",
          [&problems, &groups](const YAML::Node& node) {
            groups.clear();
            if (!node || node.IsNull()) return;
            if (!node.IsMap()) {
              problems.add(problems.at(node),
                           "groups: expected a mapping of group names to {events, metrics}");
              return;
            }
            for (const auto& entry : node) {
              if (!entry.first.IsScalar()) {
                problems.add(entry.first.Mark(), "groups: keys must be plain names");
                continue;
              }
              GroupConfig group;
              group.name = entry.first.as<std::string>();
              group.mark = problems.where(entry.first.Mark());
              const std::string path = "groups." + group.name;
              if (!valid_metric_base(group.name)) {
                problems.add(entry.first.Mark(), path + ": \"" + group.name +
                                                     "\" is not a group name (use "
                                                     "[a-z_][a-z0-9_]*)");
                continue;
              }
              Mapping(problems, path)
                  .on("events",
                      [&](const YAML::Node& value) {
                        read_group_events(problems, value, path + ".events", group.events);
                      })
                  .on("metrics",
                      [&](const YAML::Node& value) {
                        read_group_metrics(problems, value, path + ".metrics", group.metrics);
                      })
                  .visit(entry.second);
              if (!entry.second.IsMap() || !entry.second["events"].IsDefined()) {
                problems.add(entry.second.Mark(), path + ": missing required key \"events\"");
                continue;
              }
              groups.push_back(std::move(group));
            }
          },
          [&groups](YAML::Emitter& out) { dump_groups(out, groups); },
          [&groups] { return !groups.empty(); }};
}

}  // namespace hwperf::config_schema
