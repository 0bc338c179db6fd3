// collectors/events/counting_section.h: the section of a collector counting events for the
// targets it finds (process targets, containers), read and dumped through the schema's keys.
#include "tests/catch.hpp"

#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "collectors/events/counting_section.h"
#include "config/schema_keys.h"
#include "config/yaml_reader.h"

using namespace hwperf;

namespace {

// The members counting_section reads, as the process and cgroup settings have them, and one key
// of the collector's own.
struct FakeCountingSettings {
  bool enabled = false;
  std::vector<EventSpec> events;
  bool events_given = false;
  std::vector<GroupRef> groups;
  bool groups_given = false;
  double interval_seconds = 3;
};

}  // namespace

TEST_CASE("a counting collector's section has enabled, events and groups, then its own keys",
          "[config]") {
  yaml_reader::Problems problems("fake.yml");
  FakeCountingSettings settings;
  const config_schema::Key key = events::counting_section(
      problems, "fake", settings,
      {config_schema::between_key(problems, "interval_seconds", "collectors.fake.interval_seconds",
                                  settings.interval_seconds, 1, 10, "seconds")});
  CHECK(key.name == "fake");

  key.read(YAML::Load(
      "{interval_seconds: 5, groups: [software], events: [perf::TASK-CLOCK], enabled: true}"));
  CHECK(problems.list().empty());
  CHECK(settings.enabled);
  REQUIRE(settings.events.size() == 1);
  CHECK(settings.events.front().event == "perf::TASK-CLOCK");
  CHECK(settings.events_given);
  REQUIRE(settings.groups.size() == 1);
  CHECK(settings.groups.front().name == "software");
  CHECK(settings.groups_given);
  CHECK(settings.interval_seconds == 5);

  // Dumped in the section's order, whatever the file's.
  YAML::Emitter out;
  key.dump(out);
  const std::string dumped = out.c_str();
  CAPTURE(dumped);
  const auto enabled = dumped.find("enabled:");
  const auto events = dumped.find("events:");
  const auto groups = dumped.find("groups:");
  const auto own = dumped.find("interval_seconds:");
  REQUIRE(own != std::string::npos);
  CHECK(enabled < events);
  CHECK(events < groups);
  CHECK(groups < own);

  // Its problems name the keys under collectors.<name>, and an unknown key is refused with the
  // section's keys in order.
  key.read(YAML::Load("{events: 3, nope: 1}"));
  const std::vector<std::string> said = problems.list();
  REQUIRE(said.size() == 2);
  CHECK_THAT(said[0], Catch::Contains("collectors.fake.events"));
  CHECK_THAT(said[1], Catch::Contains("\"nope\" in collectors.fake (expected one of: enabled, "
                                      "events, groups, interval_seconds)"));
}
