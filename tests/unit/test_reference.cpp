#include "tests/catch.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "config/errors.h"
#include "collectors/configuration.h"
#include "config/web_config.h"
#include "exporter/cli.h"
#include "exporter/reference.h"
#include "tests/support/support.h"

using namespace hwperf;

namespace {

// "a.b.c" with `value` as YAML nesting: "a:\n  b:\n    c: value\n".
std::string nested(const std::string& path, const std::string& value) {
  std::string yaml;
  std::string indent;
  std::size_t start = 0;
  for (std::size_t dot = path.find('.'); dot != std::string::npos; dot = path.find('.', start)) {
    yaml += indent + path.substr(start, dot - start) + ":\n";
    indent += "  ";
    start = dot + 1;
  }
  return yaml + indent + path.substr(start) + ": " + value + "\n";
}

// The keys a reader names when it refuses an unknown one ("expected one of: a, b").
std::set<std::string> keys_named_in(const std::string& error) {
  const std::string marker = "(expected one of: ";
  const auto begin = error.find(marker);
  REQUIRE(begin != std::string::npos);
  const auto end = error.find(')', begin);
  std::set<std::string> names;
  std::string list = error.substr(begin + marker.size(), end - begin - marker.size());
  for (std::size_t comma; (comma = list.find(", ")) != std::string::npos;) {
    names.insert(list.substr(0, comma));
    list.erase(0, comma + 2);
  }
  names.insert(list);
  return names;
}

// Every mapping of the schema (the top level as "") with the children the description gives it.
std::map<std::string, std::set<std::string>> children(const std::vector<ConfigKeyInfo>& keys) {
  std::map<std::string, std::set<std::string>> sections{{"", {}}};
  for (const auto& key : keys) {
    const auto dot = key.path.rfind('.');
    const std::string parent = dot == std::string::npos ? "" : key.path.substr(0, dot);
    sections[parent].insert(key.path.substr(dot == std::string::npos ? 0 : dot + 1));
    if (key.section) sections[key.path];
  }
  return sections;
}

std::string error_of(const std::function<void()>& load) {
  try {
    load();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("the configuration keys described are exactly those the loader reads", "[reference]") {
  const auto keys = describe_config_keys();
  REQUIRE_FALSE(keys.empty());
  // Each mapping refuses an unknown key by listing its own; the description must list the same.
  for (const auto& [section, described] : children(keys)) {
    CAPTURE(section);
    const std::string probe = section.empty() ? "no_such_key" : section + ".no_such_key";
    const auto error = error_of([&] { parse_config_text(nested(probe, "1"), "probe.yml"); });
    CHECK(keys_named_in(error) == described);
  }
  // A default read back where the description puts it is accepted: the paths are real.
  std::size_t with_default = 0;
  for (const auto& key : keys) {
    if (key.section || key.default_value.empty()) continue;
    CAPTURE(key.path, key.default_value);
    ++with_default;
    CHECK_NOTHROW(parse_config_text(nested(key.path, key.default_value), "default.yml"));
    CHECK_FALSE(key.expected.empty());
  }
  CHECK(with_default > 0);
}

TEST_CASE("the web config keys described are exactly those its reader reads", "[reference]") {
  const auto keys = describe_web_config_keys();
  REQUIRE_FALSE(keys.empty());
  const test::TempDir dir;
  for (const auto& [section, described] : children(keys)) {
    CAPTURE(section);
    const std::string probe = section.empty() ? "no_such_key" : section + ".no_such_key";
    const auto file = dir.write("web.yml", nested(probe, "1"));
    const auto error = error_of([&] { load_web_config(file.string()); });
    CHECK(keys_named_in(error) == described);
  }
}

TEST_CASE("the reference names every flag and key, each with a meaning", "[reference]") {
  std::vector<std::string> problems;
  const std::string page = reference_markdown(problems);
  CHECK(problems.empty());
  for (const auto& flag : cli_flags()) {
    CAPTURE(flag.name);
    CHECK((page.find("| `" + std::string(flag.name) + "` |") != std::string::npos) != flag.hidden);
  }
  for (const auto& keys : {describe_config_keys(), describe_web_config_keys()}) {
    for (const auto& key : keys) {
      CAPTURE(key.path);
      CHECK((page.find("| `" + key.path + "` |") != std::string::npos) != key.section);
    }
  }
}
