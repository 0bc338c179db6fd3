// /topology.json: the scrape's own families, reshaped so the page can compute rates per place
// cheaply (one array of places and one of values per series group, not one object per sample:
// at 512 CPUs that keeps the body a fraction of the exposition's size).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <string>

#include "common/enum_names.h"
#include "common/text.h"
#include "exporter/topology_page/topology_page.h"

namespace hwperf {
namespace {

enum class Scope { cpu, core, package };

constexpr EnumName<Scope> kScopeNames[] = {
    {Scope::cpu, "cpu"}, {Scope::core, "core"}, {Scope::package, "package"}};

const char* scope_name(Scope scope) { return name_of(kScopeNames, scope); }

bool is_place_label(const std::string& name) {
  return name == "cpu" || name == "core" || name == "package" || name == "numa_node" ||
         name == "die";
}

// Place labels carry Linux numbers; anything else (a mistake upstream) is left out rather than
// written into the JSON as a number it is not.
std::optional<unsigned long> as_number(const std::string& text) {
  unsigned long value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) {
    return std::nullopt;
  }
  return value;
}

void append_number(std::string& out, double value) {
  if (!std::isfinite(value)) {
    out += "null";
    return;
  }
  char buffer[32];
  // Shortest text that reads back as the same double: integers up to 2^53 print as integers.
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, result.ptr);
}

std::optional<Scope> scope_of(const prometheus::ClientMetric& metric) {
  bool core = false, package = false;
  for (const auto& label : metric.label) {
    if (label.name == "cpu") return Scope::cpu;
    core = core || label.name == "core";
    package = package || label.name == "package";
  }
  if (core && package) return Scope::core;
  if (package) return Scope::package;
  return std::nullopt;
}

struct Group {
  std::string labels;                        // the JSON object of the labels that are not places
  std::vector<unsigned long> first, second;  // cpu | package,core | package,die
  std::vector<bool> has_second;
  std::vector<double> values;
};

void append_array(std::string& out, const char* name, const std::vector<unsigned long>& numbers,
                  const std::vector<bool>* present = nullptr) {
  out += ",\"";
  out += name;
  out += "\":[";
  for (std::size_t i = 0; i < numbers.size(); ++i) {
    if (i != 0) out += ',';
    if (present != nullptr && !(*present)[i]) {
      out += "null";
    } else {
      out += std::to_string(numbers[i]);
    }
  }
  out += ']';
}

void append_family(std::string& out, const prometheus::MetricFamily& family, Scope scope) {
  std::vector<Group> groups;
  std::map<std::string, std::size_t> by_labels;
  for (const auto& metric : family.metric) {
    if (scope_of(metric) != scope) continue;
    std::string labels = "{";
    std::optional<unsigned long> cpu, core, package, die;
    bool valid = true;
    for (const auto& label : metric.label) {
      if (is_place_label(label.name)) {
        const auto number = as_number(label.value);
        valid = valid && number.has_value();
        if (label.name == "cpu") cpu = number;
        if (label.name == "core") core = number;
        if (label.name == "package") package = number;
        if (label.name == "die") die = number;
        continue;
      }
      if (labels.size() > 1) labels += ',';
      labels += json_string(label.name) + ':' + json_string(label.value);
    }
    labels += '}';
    if (!valid) continue;
    const auto [it, inserted] = by_labels.emplace(labels, groups.size());
    if (inserted) groups.push_back({labels, {}, {}, {}, {}});
    Group& group = groups[it->second];
    switch (scope) {
      case Scope::cpu: group.first.push_back(*cpu); break;
      case Scope::core:
        group.first.push_back(*package);
        group.second.push_back(*core);
        group.has_second.push_back(true);
        break;
      case Scope::package:
        group.first.push_back(*package);
        group.second.push_back(die.value_or(0));
        group.has_second.push_back(die.has_value());
        break;
    }
    group.values.push_back(metric.counter.value);
  }
  if (groups.empty()) return;
  if (out.back() != '[') out += ',';
  out += "\n{\"name\":" + json_string(family.name) + ",\"help\":" + json_string(family.help) +
         ",\"scope\":\"" + scope_name(scope) + "\",\"series\":[";
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const Group& group = groups[g];
    if (g != 0) out += ',';
    out += "{\"labels\":" + group.labels;
    switch (scope) {
      case Scope::cpu: append_array(out, "cpu", group.first); break;
      case Scope::core:
        append_array(out, "package", group.first);
        append_array(out, "core", group.second);
        break;
      case Scope::package: {
        append_array(out, "package", group.first);
        const bool any_die = std::find(group.has_second.begin(), group.has_second.end(), true) !=
                             group.has_second.end();
        if (any_die) append_array(out, "die", group.second, &group.has_second);
        break;
      }
    }
    out += ",\"value\":[";
    for (std::size_t i = 0; i < group.values.size(); ++i) {
      if (i != 0) out += ',';
      append_number(out, group.values[i]);
    }
    out += "]}";
  }
  out += "]}";
}

}  // namespace

std::string topology_json(const std::vector<prometheus::MetricFamily>& families,
                          double timestamp_seconds) {
  std::string out;
  out.reserve(4096 + families.size() * 1024);
  char stamp[32];
  std::snprintf(stamp, sizeof stamp, "%.3f", timestamp_seconds);
  out += "{\"timestamp\":";
  out += stamp;
  out += ",\"families\":[";
  for (const auto& family : families) {
    if (family.type != prometheus::MetricType::Counter || family.metric.empty()) continue;
    // One scope per family: the first series' (a family has one aggregation level).
    if (const auto scope = scope_of(family.metric.front())) append_family(out, family, *scope);
  }
  out += "]}\n";
  return out;
}

}  // namespace hwperf
