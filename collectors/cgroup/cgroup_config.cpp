#include "collectors/cgroup/cgroup_config.h"

#include "collectors/events/counting_section.h"
#include "config/schema_keys.h"

namespace hwperf {
namespace {

using namespace yaml_reader;
using namespace config_schema;

// collectors.cgroup.roots: paths below the cgroup mount, kept without their slashes; a path that
// climbs out of the hierarchy is refused.
void read_cgroup_roots(Problems& problems, const YAML::Node& node, std::vector<CgroupRoot>& roots) {
  const std::string path = "collectors.cgroup.roots";
  roots.clear();
  read_string_list(
      problems, node, path, "cgroup paths", [&](std::string text, const YAML::Node& item) {
        while (!text.empty() && text.front() == '/') text.erase(0, 1);
        while (!text.empty() && text.back() == '/') text.pop_back();
        if (text == ".." || text.rfind("../", 0) == 0 || text.find("/../") != std::string::npos ||
            (text.size() >= 3 && text.compare(text.size() - 3, 3, "/..") == 0)) {
          problems.add(item.Mark(), path + ": \"" + text + "\" leaves the hierarchy");
          return;
        }
        roots.push_back({text, problems.where(item.Mark())});
      });
}

// collectors.cgroup.match: regular expressions, each checked here so that a typo fails startup.
void read_cgroup_match(Problems& problems, const YAML::Node& node,
                       std::vector<CgroupPattern>& match) {
  const std::string path = "collectors.cgroup.match";
  match.clear();
  read_string_list(problems, node, path, "regular expressions",
                   [&](std::string text, const YAML::Node& item) {
                     if (text.empty() || !check_regex(problems, item, path, text)) return;
                     match.push_back({text, problems.where(item.Mark())});
                   });
}

// A cgroup event per CPU and container would multiply the series by the CPUs: package or
// machine only.
Key granularity_key(Problems& problems, Granularity& granularity) {
  return {"granularity",
          [&problems, &granularity](const YAML::Node& n) {
            const std::string path = "collectors.cgroup.granularity";
            read_enum(problems, path, granularity, kGranularityNames)(n);
            if (granularity != Granularity::package && granularity != Granularity::machine) {
              problems.add(problems.at(n), path +
                                               ": expected package or machine (a cgroup event "
                                               "per CPU and container would multiply the series "
                                               "by the CPUs)");
            }
          },
          dump_enum(granularity)};
}

Key roots_key(Problems& problems, std::vector<CgroupRoot>& roots) {
  return {"roots",
          [&problems, &roots](const YAML::Node& n) { read_cgroup_roots(problems, n, roots); },
          [&roots](YAML::Emitter& out) {
            out << YAML::Flow << YAML::BeginSeq;
            for (const auto& root : roots) out << "/" + root.path;
            out << YAML::EndSeq;
          },
          [&roots] { return !roots.empty(); }};
}

Key match_key(Problems& problems, std::vector<CgroupPattern>& match) {
  return {"match",
          [&problems, &match](const YAML::Node& n) { read_cgroup_match(problems, n, match); },
          [&match](YAML::Emitter& out) {
            out << YAML::Flow << YAML::BeginSeq;
            for (const auto& pattern : match) out << pattern.regex;
            out << YAML::EndSeq;
          },
          [&match] { return !match.empty(); }};
}

Key max_cgroups_key(Problems& problems, unsigned& max_cgroups) {
  return {"max_cgroups",
          [&problems, &max_cgroups](const YAML::Node& n) {
            const std::string path = "collectors.cgroup.max_cgroups";
            double value = max_cgroups;
            read_non_negative(problems, path, value)(n);
            if (value < 1 || value > 65536 ||
                value != static_cast<double>(static_cast<unsigned>(value))) {
              problems.add(problems.at(n), path + ": expected a whole number from 1 to 65536");
              return;
            }
            max_cgroups = static_cast<unsigned>(value);
          },
          dump_value(max_cgroups)};
}

}  // namespace

Key cgroup_settings_keys(Problems& problems, Config& config) {
  auto& cgroup = config.get<CgroupCollectorConfig>();
  return events::counting_section(
      problems, "cgroup", cgroup,
      {granularity_key(problems, cgroup.granularity), roots_key(problems, cgroup.roots),
       match_key(problems, cgroup.match), max_cgroups_key(problems, cgroup.max_cgroups),
       rescan_interval_key(problems, "collectors.cgroup.rescan_interval_seconds",
                           cgroup.rescan_interval_seconds),
       enum_key(problems, "runtime", "collectors.cgroup.runtime", cgroup.runtime,
                kContainerRuntimeNames),
       enum_key(problems, "mode", "collectors.cgroup.mode", cgroup.mode, kCountingModeNames)});
}

}  // namespace hwperf
