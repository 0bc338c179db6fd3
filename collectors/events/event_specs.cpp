#include "collectors/events/event_specs.h"

#include <map>
#include <stdexcept>

#include "collectors/metrics.h"
#include "common/enum_names.h"
#include "common/text.h"
#include "config/errors.h"

namespace hwperf::events {
namespace {

constexpr EnumName<Granularity> kMetricLevels[] = {{Granularity::cpu, "cpu"},
                                                   {Granularity::core, "core"},
                                                   {Granularity::package, "package"},
                                                   {Granularity::machine, "machine"}};

}  // namespace

std::vector<EventSpec> events_from_names(std::initializer_list<const char*> names) {
  std::vector<EventSpec> events;
  for (const char* name : names) {
    EventSpec event;
    event.event = name;
    events.push_back(std::move(event));
  }
  return events;
}

std::string family_level(Granularity granularity) { return name_of(kMetricLevels, granularity); }

std::string counter_family_name(Granularity granularity, const ExportedEvent& event) {
  return counter_name({family_level(granularity), event.metric});
}

std::string metric_base_of(const EventSpec& config, const std::string& where,
                           std::vector<std::string>& problems) {
  if (config.metric.empty()) return default_metric_base(config.event);
  if (ends_with(config.metric, "_total")) {
    problems.push_back(where + ": metric \"" + config.metric + "\" for event \"" + config.event +
                       "\" must not end in _total; the exporter adds it");
    return "";
  }
  // The exported value is in seconds whatever the name, so the name must say so.
  if (event_unit(config.event) == Unit::nanoseconds && !ends_with(config.metric, "_seconds")) {
    return config.metric + "_seconds";
  }
  return config.metric;
}

std::string description_of(const EventSpec& config,
                           const std::function<std::string(const std::string&)>& fallback) {
  if (!config.help.empty()) return config.help;
  if (auto builtin = builtin_description(config.event); !builtin.empty()) return builtin;
  return fallback(config.event);
}

std::vector<std::string> name_families(std::vector<ExportedEvent>& specs, std::string_view level) {
  std::vector<std::string> problems;
  std::map<std::string, std::size_t> by_family;  // family name -> index into specs
  for (std::size_t i = 0; i < specs.size(); ++i) {
    ExportedEvent& spec = specs[i];
    const std::string where = spec.where.empty() ? "" : spec.where + ": ";
    try {
      spec.family = counter_name({level, spec.metric});
    } catch (const std::invalid_argument& e) {
      problems.push_back(where + "event \"" + spec.event + "\": " + e.what() +
                         "; set `metric:` to a name of [a-z_][a-z0-9_]*");
      continue;
    }
    const auto [it, inserted] = by_family.emplace(spec.family, i);
    if (!inserted) {
      const ExportedEvent& first = specs[it->second];
      problems.push_back(where + "event \"" + spec.event + "\" would be exported as " +
                         spec.family + ", like \"" + first.event + "\"" +
                         (first.where.empty() ? "" : " at " + first.where) +
                         "; give one of them another `metric:` name");
    }
  }
  return problems;
}

std::vector<ExportedEvent> resolve_event_specs(
    const std::vector<EventSpec>& events, bool are_defaults, Granularity granularity,
    const std::function<std::string(const std::string&)>& papi_description) {
  std::vector<std::string> problems;
  std::vector<ExportedEvent> specs;
  for (const auto& config : events) {
    const std::string where = config.mark.to_string();
    if (has_cpu_qualifier(config.event)) {
      problems.push_back(where + ": PAPI event \"" + config.event +
                         "\" has a cpu= qualifier; the collector binds every event to each CPU "
                         "itself: choose CPUs with collectors.papi.cpus instead");
      continue;
    }
    if (const auto sampling = sampling_qualifier(config.event)) {
      problems.push_back(where + ": PAPI event \"" + config.event +
                         "\" has the sampling qualifier " + *sampling +
                         "; the exporter counts, it does not sample (a sampled event "
                         "signals every overflow): remove it");
      continue;
    }
    ExportedEvent spec;
    spec.event = config.event;
    spec.counted_as = config.event;
    spec.unit = event_unit(config.event);
    spec.is_default = are_defaults;
    spec.metric = metric_base_of(config, where, problems);
    if (spec.metric.empty()) continue;
    spec.description = description_of(config, [&](const std::string& name) {
      const std::string papi = papi_description(name);
      return papi.empty() ? "PAPI event " + name : papi;
    });
    spec.where = where;
    specs.push_back(std::move(spec));
  }
  const auto naming = name_families(specs, granularity);
  problems.insert(problems.end(), naming.begin(), naming.end());
  if (!problems.empty()) throw ConfigError(std::move(problems));
  return specs;
}

}  // namespace hwperf::events
