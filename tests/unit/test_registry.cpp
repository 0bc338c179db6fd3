// collectors/registry.h and collector_entry.h: the entries the collector folders export, in
// registry order, each with what it has and nothing else.
#include "tests/catch.hpp"

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "collectors/collector_entry.h"
#include "collectors/registry.h"
#include "config/config.h"
#include "config/schema_keys.h"

using namespace hwperf;

namespace {

// What an entry has, as the registry and the loader look at it.
struct Has {
  const char* name;
  bool files;
  const char* library_label;
  bool rule_scopes;
  bool families;
  bool system_wide;
  bool commands;
};

Has has(const CollectorEntry& entry) {
  return {entry.name,
          entry.files != nullptr,
          entry.library_label,
          entry.rule_scopes != nullptr,
          entry.families != nullptr,
          entry.system_wide,
          entry.commands != nullptr};
}

}  // namespace

TEST_CASE("the registry lists every collector's entry in scrape order with what each has",
          "[registry]") {
  // name, files, library, rule scopes, families, system-wide, experiment mode's commands
  const std::vector<Has> expected = {
      {"topology", false, "hwloc_version", false, true, false, false},
      {"papi", true, "papi_version", true, true, true, false},
      {"rapl", true, nullptr, false, false, true, false},
      {"process", true, nullptr, true, true, false, true},
      {"cgroup", true, nullptr, true, true, true, false},
      {"uncore", true, nullptr, false, false, true, false},
      {"hwmon", true, nullptr, false, false, false, false},
  };
  const auto& registry = collector_registry();
  REQUIRE(registry.size() == expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const CollectorEntry& entry = *registry[i];
    const Has actual = has(entry);
    CAPTURE(i, expected[i].name);
    CHECK(std::string(actual.name) == expected[i].name);
    CHECK(actual.files == expected[i].files);
    CHECK((actual.library_label == nullptr) == (expected[i].library_label == nullptr));
    if (actual.library_label != nullptr && expected[i].library_label != nullptr) {
      CHECK(std::string(actual.library_label) == expected[i].library_label);
      REQUIRE(entry.library_version != nullptr);
      CHECK_FALSE(entry.library_version().empty());
    } else {
      CHECK(entry.library_version == nullptr);
    }
    CHECK(actual.rule_scopes == expected[i].rule_scopes);
    CHECK(actual.families == expected[i].families);
    CHECK(actual.system_wide == expected[i].system_wide);
    CHECK(actual.commands == expected[i].commands);
    // What every entry has.
    CHECK(entry.enabled != nullptr);
    CHECK(entry.make != nullptr);
    CHECK(entry.check != nullptr);
    CHECK(entry.settings != nullptr);
  }
  const CollectorEntry& process = *registry[3];
  REQUIRE(process.commands != nullptr);
  CHECK(process.commands->add != nullptr);
  CHECK(process.commands->started != nullptr);
  CHECK(process.commands->events != nullptr);
  CHECK(process.commands->user_mode_only != nullptr);
}

TEST_CASE("the default configuration enables the collectors it always did", "[registry]") {
  const Config config;
  std::vector<std::string> enabled;
  for (const CollectorEntry* entry : collector_registry()) {
    if (entry->enabled(config)) enabled.push_back(entry->name);
  }
  // process is on but has no targets; cgroup is off until asked for.
  CHECK(enabled == std::vector<std::string>{"topology", "papi", "rapl", "uncore", "hwmon"});
  CHECK(system_wide_collectors(config) == std::vector<std::string>{"papi", "rapl", "uncore"});
}

namespace {

bool test_enabled(const Config&) { return true; }
std::unique_ptr<Collector> test_make(const Config&, const Topology&, const CollectorServices&) {
  return nullptr;
}
std::vector<std::string> test_check(const Config&, const Topology&, const CollectorServices&) {
  return {"checked"};
}
FileNeed test_files(const Config&, const Topology&) { return {"test", 3}; }
std::string test_version() { return "1.2.3"; }
std::vector<events::RuleScope> test_rule_scopes(const Config&) { return {}; }
std::vector<FamilyDeclaration> test_families(const Config&, const Topology&) { return {}; }
// Only its address is compared.
config_schema::Key test_keys(yaml_reader::Problems&, Config&) {
  throw std::logic_error("not read in this test");
}

}  // namespace

TEST_CASE("an entry holds what every collector has, and only the rest it states by name",
          "[registry]") {
  const CollectorEntry bare("bare", &test_keys, &test_enabled, &test_make, &test_check);
  CHECK(std::string(bare.name) == "bare");
  CHECK(bare.settings == &test_keys);
  CHECK(bare.enabled == &test_enabled);
  CHECK(bare.make == &test_make);
  CHECK(bare.check == &test_check);
  CHECK(bare.files == nullptr);
  CHECK(bare.library_label == nullptr);
  CHECK(bare.library_version == nullptr);
  CHECK(bare.rule_scopes == nullptr);
  CHECK(bare.families == nullptr);
  CHECK_FALSE(bare.system_wide);
  CHECK(bare.commands == nullptr);

  static const CommandCounting commands = {nullptr, nullptr, nullptr, nullptr};
  const CollectorEntry full =
      CollectorEntry("full", &test_keys, &test_enabled, &test_make, &test_check)
          .with_files(&test_files)
          .with_library("test_version", &test_version)
          .with_rule_scopes(&test_rule_scopes)
          .with_families(&test_families)
          .counts_system_wide()
          .with_commands(commands);
  CHECK(std::string(full.name) == "full");
  CHECK(full.check == &test_check);
  CHECK(full.files == &test_files);
  CHECK(std::string(full.library_label) == "test_version");
  CHECK(full.library_version == &test_version);
  CHECK(full.rule_scopes == &test_rule_scopes);
  CHECK(full.families == &test_families);
  CHECK(full.system_wide);
  CHECK(full.commands == &commands);
}
