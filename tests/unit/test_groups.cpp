// Event groups' pure parts: formulas (numbers and PromQL), the groups: configuration, the
// built-in table, recording rules, and the scaling of a group's counts by its one running share.
#include "tests/catch.hpp"
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "collectors/events/formula.h"
#include "collectors/events/groups.h"
#include "collectors/events/rules.h"
#include "collectors/papi/papi_config.h"
#include "collectors/perf/perf_event.h"
#include "collectors/perf/pfm_encoder.h"
#include "common/text.h"
#include "config/errors.h"
#include "collectors/configuration.h"

#include "tests/support/support.h"

using namespace hwperf;
using namespace hwperf::events;

TEST_CASE("Formulas evaluate as arithmetic and refuse a missing denominator", "[groups]") {
  const std::map<std::string, double> values = {{"ins", 6.0}, {"cyc", 3.0}, {"zero", 0.0}};
  const auto [text, expected] = GENERATE(table<std::string, double>({
      {"ins / cyc", 2.0},
      {"1 - cyc / ins", 0.5},
      {"(ins + cyc) * 2", 18.0},
      {"-ins + 10", 4.0},
      {"ins / cyc / 1e9", 2e-9},
      {"2.5 * cyc", 7.5},
  }));
  CAPTURE(text);
  const auto value = Formula::parse(text).evaluate(values);
  REQUIRE(value);
  CHECK(*value == Approx(expected));
  CHECK_FALSE(Formula::parse("ins / zero").evaluate(values));
  CHECK_FALSE(Formula::parse("ins / nothing").evaluate(values));
}

TEST_CASE("Formulas that cannot be read say where", "[groups]") {
  const auto [text, where] = GENERATE(table<std::string, std::string>({
      {"ins /", "at character 6"},
      {"(ins", "at character 5"},
      {"ins $ cyc", "at character 5"},
      {"", "empty"},
      {"INS", "at character 1"},
  }));
  CAPTURE(text);
  try {
    Formula::parse(text);
    FAIL("parsed");
  } catch (const std::invalid_argument& e) {
    CHECK_THAT(e.what(), Catch::Contains(where));
  }
}

TEST_CASE("Formulas become PromQL with guarded divisors", "[groups]") {
  const auto formula = Formula::parse("1 - miss / (access + 0)");
  CHECK(formula.variables() == std::vector<std::string>{"miss", "access"});
  const auto promql = formula.promql([](const std::string& v) { return "rate(x_" + v + "[1m])"; });
  // PromQL compares after it adds: "a + 0 > 0" keeps the sum where it is above zero.
  CHECK(promql == "1 - (rate(x_miss[1m]) / (rate(x_access[1m]) + 0 > 0))");
  CHECK(Formula::parse("cyc / clock / 1e9").promql([](const std::string& v) { return v; }) ==
        "(cyc / (clock > 0)) / 1e9");
}

TEST_CASE("User groups are read with their marks, and checked against the built-in ones",
          "[groups][config]") {
  const Config config = parse_config_text(
      "collectors:\n"
      "  papi:\n"
      "    groups: [ipc, mygroup]\n"
      "groups:\n"
      "  mygroup:\n"
      "    events: {ins: PAPI_TOT_INS, cyc: {event: PAPI_TOT_CYC, metric: my_cycles}}\n"
      "    metrics:\n"
      "      my_ipc: {expr: \"ins / cyc\", help: \"Instructions per cycle\"}\n",
      "hwperf.yml");
  REQUIRE(config.get<PapiCollectorConfig>().groups_given);
  REQUIRE(config.get<PapiCollectorConfig>().groups.size() == 2);
  CHECK(config.get<PapiCollectorConfig>().groups[1].mark.to_string() == "hwperf.yml:3:19");
  REQUIRE(config.get<GroupsConfig>().groups.size() == 1);
  const auto groups =
      group_definitions(config.get<PapiCollectorConfig>().groups, true, {},
                        config.get<GroupsConfig>().groups, "collectors.papi.groups");
  REQUIRE(groups.size() == 2);
  CHECK(groups[0].builtin);
  CHECK(groups[1].name == "mygroup");
  REQUIRE(groups[1].members.size() == 2);
  CHECK(groups[1].members[0].metric == "instructions");
  CHECK(groups[1].members[1].metric == "my_cycles");
  CHECK(groups[1].metrics.at(0).help == "Instructions per cycle");
  // The dump reads back to the same groups.
  const Config again = parse_config_text(dump_config(config), "dump.yml");
  CHECK(again.get<GroupsConfig>().groups.size() == 1);
  CHECK(again.get<GroupsConfig>().groups[0].metrics.at(0).expr == "ins / cyc");
}

TEST_CASE("Group mistakes are configuration errors naming file, line and column",
          "[groups][config]") {
  const auto problems = [](const std::string& yaml) -> std::string {
    try {
      const Config config = parse_config_text(yaml, "hwperf.yml");
      group_definitions(config.get<PapiCollectorConfig>().groups,
                        config.get<PapiCollectorConfig>().groups_given, {},
                        config.get<GroupsConfig>().groups, "collectors.papi.groups");
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  };
  CHECK_THAT(problems("collectors: {papi: {groups: [nosuch]}}\n"),
             Catch::Contains("hwperf.yml:1:30: collectors.papi.groups: no group is named "
                             "\"nosuch\" (built-in: ipc, branch"));
  CHECK_THAT(problems("collectors: {papi: {groups: [g]}}\n"
                      "groups:\n  g: {events: {a: perf::PAGE-FAULTS}, metrics: {r: {expr: a / "
                      "b}}}\n"),
             Catch::Contains("groups.g.metrics.r.expr: \"a / b\" reads b, which the group does "
                             "not count (its events: a)"));
  CHECK_THAT(problems("collectors: {papi: {groups: [g]}}\n"
                      "groups:\n  g: {events: {a: perf::PAGE-FAULTS}, metrics: {r: {expr: a "
                      "/}}}\n"),
             Catch::Contains("is not a formula: at character 4"));
  CHECK_THAT(problems("groups:\n  ipc: {events: {a: perf::PAGE-FAULTS}}\n"),
             Catch::Contains("hwperf.yml:2:3: groups.ipc: a built-in group has this name"));
  CHECK_THAT(problems("groups:\n  g: {metrics: {}}\n"),
             Catch::Contains("groups.g: missing required key \"events\""));
  CHECK_THAT(problems("groups:\n  g: {events: {a: \"\"}}\n"),
             Catch::Contains("groups.g.events.a: an empty event name"));
  CHECK_THAT(problems("collectors: {papi: {groups: [ipc, ipc]}}\n"),
             Catch::Contains("group \"ipc\" is listed twice"));
  CHECK_THAT(problems("groups:\n  g: {events: {a: perf::PAGE-FAULTS}, extra: 1}\n"),
             Catch::Contains("unknown key \"extra\" in groups.g"));
  CHECK_THAT(problems("collectors: {papi: {groups: [ipc, mine]}}\n"
                      "groups:\n  mine: {events: {a: perf::PAGE-FAULTS, b: perf::TASK-CLOCK}, "
                      "metrics: {ipc: {expr: a / b}}}\n"),
             Catch::Contains("groups ipc and mine both have a metric named ipc"));
}

TEST_CASE("Every built-in group's formulas read only its own members", "[groups]") {
  for (const auto& group : builtin_groups()) {
    CAPTURE(group.name);
    CHECK_FALSE(group.members.empty());
    CHECK_FALSE(group.metrics.empty());
    CHECK_FALSE(group.source.empty());
    for (const auto& metric : group.metrics) {
      for (const auto& variable : metric.formula.variables()) {
        CAPTURE(variable);
        CHECK(std::any_of(group.members.begin(), group.members.end(),
                          [&](const auto& member) { return member.variable == variable; }));
      }
    }
  }
}

// Issue 35, item 10: perf::CPU-MIGRATIONS was hwperf_*_migrations_total alone and
// hwperf_*_cpu_migrations_total in the software group. The vocabulary names every event it knows
// (builtin_description), and a built-in member counting such an event takes that name.
TEST_CASE("An event the vocabulary names has that name in every built-in group that counts it",
          "[groups][events]") {
  std::size_t checked = 0;
  for (const auto& group : builtin_groups()) {
    for (const auto& member : group.members) {
      for (const auto& candidate : member.candidates) {
        if (builtin_description(candidate.event).empty()) continue;  // a vendor's native event
        CAPTURE(group.name, member.variable, candidate.event);
        CHECK(member.metric == default_metric_base(candidate.event));
        ++checked;
      }
    }
  }
  // ipc, branch, cache, freq and software count nothing else.
  CHECK(checked >= 13);
}

TEST_CASE("A built-in group counts the first candidate of each member this machine has",
          "[groups]") {
  GroupDefinition group;
  group.name = "g";
  EventSpec a1, a2, b1;
  a1.event = "VENDOR_A";
  a2.event = "perf::GENERIC_A";
  b1.event = "perf::B";
  group.members = {{"a", "a", Unit::count, {a1, a2}}, {"b", "b", Unit::count, {b1}}};
  const auto choice = choose_members(
      group,
      [](const EventSpec& event) {
        return event.event == "VENDOR_A" ? CandidateVerdict{"not on this CPU", "elsewhere", true}
                                         : CandidateVerdict{};
      },
      "this PMU");
  REQUIRE(choice.unavailable.empty());
  REQUIRE(choice.events.size() == 2);
  CHECK(choice.events[0].event == "perf::GENERIC_A");
  const auto none = choose_members(
      group,
      [](const EventSpec& event) {
        return event.event == "perf::B" ? CandidateVerdict{}
                                        : CandidateVerdict{"no hardware PMU", "ENOENT", false};
      },
      "this PMU");
  CHECK(none.events.empty());
  CHECK(none.unavailable == "a (VENDOR_A: no hardware PMU)");
  CHECK(none.member == "a");
  CHECK(none.event == "VENDOR_A");
  CHECK(none.cause == "ENOENT");
}

// Issue 35, item 16: on AMD, l1d's reason named Intel's MEM_INST_RETIRED:ANY, listed first.
TEST_CASE("A member's reason is that of the first of its events this machine has", "[groups]") {
  GroupDefinition group;
  group.name = "g";
  group.members = {{"access", "accesses", Unit::count, {}}};
  for (const char* name : {"INTEL_EVENT", "AMD_EVENT", "perf::GENERIC"}) {
    EventSpec candidate;
    candidate.event = name;
    group.members[0].candidates.push_back(candidate);
  }
  // AMD's event is this machine's; Intel's is not (it does not encode).
  const auto amd = choose_members(
      group,
      [](const EventSpec& event) {
        return event.event == "INTEL_EVENT"
                   ? CandidateVerdict{"event not found", "not an event of this machine", true}
                   : CandidateVerdict{"perf_event_open on CPU 0: ENOENT", "ENOENT", false};
      },
      "libpfm4's core PMU is amd64_fam19h_zen4");
  CHECK(amd.unavailable == "access (AMD_EVENT: perf_event_open on CPU 0: ENOENT)");
  CHECK(amd.event == "AMD_EVENT");
  // None of them is: the machine's PMU is named, with every event tried.
  const auto foreign = choose_members(
      group,
      [](const EventSpec&) {
        return CandidateVerdict{"event not found", "not an event of this machine", true};
      },
      "libpfm4's core PMU is arm_neoverse_v2");
  CHECK(foreign.unavailable ==
        "access (none of its events is one this machine has: libpfm4's core PMU is "
        "arm_neoverse_v2; tried INTEL_EVENT, AMD_EVENT, perf::GENERIC)");
  CHECK(foreign.event == "INTEL_EVENT, AMD_EVENT, perf::GENERIC");
  CHECK(foreign.cause == "not an event of this machine");
  // A single event (a user's group) keeps its own reason: a typo deserves libpfm4's words.
  group.members[0].candidates.resize(1);
  const auto typo = choose_members(
      group,
      [](const EventSpec&) {
        return CandidateVerdict{"event not found", "not an event of this machine", true};
      },
      "libpfm4's core PMU is icx");
  CHECK(typo.unavailable == "access (INTEL_EVENT: event not found)");
}

TEST_CASE("Recording rules divide a group's own rates, summed at each level", "[groups]") {
  RuleScope scope;
  scope.family_level = "cpu";
  scope.levels = {{"instance_cpu", {"cpu", "core", "package", "numa_node"}},
                  {"instance_package", {"package"}}};
  scope.groups = group_definitions({{"ipc", {}}}, true, {}, {}, "collectors.papi.groups");
  const auto rules = recording_rules(scope, "1m");
  REQUIRE(rules.size() == 2);
  CHECK(rules[0].record == "instance_cpu:hwperf_cpu_ipc:rate1m");
  CHECK(rules[0].expr ==
        "sum by (instance, job, cpu, core, package, numa_node) "
        "(rate(hwperf_cpu_instructions_total{group=\"ipc\"}[1m])) / (sum by (instance, job, cpu, "
        "core, package, numa_node) (rate(hwperf_cpu_cycles_total{group=\"ipc\"}[1m])) > 0)");
  CHECK(rules[1].record == "instance_package:hwperf_cpu_ipc:rate1m");
  const std::string file = rule_file({scope}, "1m");
  CHECK_THAT(file, Catch::Contains("  - name: hwperf_cpu_ipc\n    rules:\n"));
}

TEST_CASE("A rotated group's counts are scaled by one share, so their ratio is the true one",
          "[groups]") {
  // Two events counted together for 40 of 100 ms of an interval: both scaled by 100/40.
  const perf::GroupReading before{1000, 1000, {500, 250}};
  const perf::GroupReading after{101000, 41000, {4500, 2250}};
  const auto delta = perf::delta_between(before, after);
  CHECK(delta.scaled);
  CHECK(delta.enabled_ns == 100000);
  CHECK(delta.running_ns == 40000);
  CHECK(delta.raw_counts == std::vector<std::uint64_t>{4000, 2000});
  CHECK(delta.counts == std::vector<std::uint64_t>{10000, 5000});
  // The first reading counts from zero.
  const auto first = perf::delta_between(perf::GroupReading{}, before);
  CHECK(first.counts == std::vector<std::uint64_t>{500, 250});
}

TEST_CASE(
    "Recorded readings of a rotated group give the true ratio; the same events ungrouped "
    "do not",
    "[groups]") {
  // 100 ms in four slices of 25 ms: the CPU busy, idle, busy, idle. Busy, it retires 2000
  // instructions in 1000 cycles per ms; idle, 20 in 10: an IPC of 2 throughout, at rates 100x
  // apart. The kernel has one counter free: it rotates what it must count every 25 ms.
  const std::uint64_t slice_ns = 25'000'000;
  struct Slice {
    std::uint64_t instructions, cycles;
  };
  const std::vector<Slice> slices = {{50000, 25000}, {500, 250}, {50000, 25000}, {500, 250}};
  std::uint64_t true_instructions = 0, true_cycles = 0;
  for (const auto& slice : slices) {
    true_instructions += slice.instructions;
    true_cycles += slice.cycles;
  }
  const double true_ipc = static_cast<double>(true_instructions) / static_cast<double>(true_cycles);
  REQUIRE(true_ipc == Approx(2.0));

  // Grouped: both events on the counters together, in slices 0 and 1 (the group rotates as one).
  perf::GroupReading group{4 * slice_ns, 2 * slice_ns, {0, 0}};
  for (std::size_t s : {0, 1}) {
    group.values[0] += slices[s].instructions;
    group.values[1] += slices[s].cycles;
  }
  const auto grouped = perf::delta_between(perf::GroupReading{0, 0, {0, 0}}, group);
  REQUIRE(grouped.scaled);
  const double grouped_ipc =
      static_cast<double>(grouped.counts[0]) / static_cast<double>(grouped.counts[1]);
  CHECK(grouped_ipc == Approx(true_ipc));

  // Ungrouped: each event has its own turn, instructions in the busy slices and cycles in the
  // idle ones; each is scaled by its own share, and the ratio is off by the busy/idle contrast.
  perf::Reading instructions{0, 4 * slice_ns, 2 * slice_ns};
  perf::Reading cycles{0, 4 * slice_ns, 2 * slice_ns};
  for (std::size_t s : {0, 2}) instructions.value += slices[s].instructions;
  for (std::size_t s : {1, 3}) cycles.value += slices[s].cycles;
  const auto alone_instructions = perf::delta_between(perf::Reading{}, instructions);
  const auto alone_cycles = perf::delta_between(perf::Reading{}, cycles);
  const double ungrouped_ipc =
      static_cast<double>(alone_instructions.count) / static_cast<double>(alone_cycles.count);
  CHECK(ungrouped_ipc == Approx(true_ipc * 100));
  CHECK(std::abs(ungrouped_ipc - true_ipc) > 1.0);
}

namespace {

// A table cell: a pipe would end it.
std::string table_cell(const std::string& text) {
  std::string out;
  for (char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

std::string in_code(const std::string& text) { return "`" + text + "`"; }

// The table of built-in groups in docs/collectors/groups.md, made from builtin_groups().
std::string builtin_groups_table() {
  std::string table =
      "| group | what it measures | members (variable: family metric, then the events that may "
      "count it, in order of preference) | metrics: formula | source |\n"
      "|---|---|---|---|---|\n";
  for (const auto& group : builtin_groups()) {
    std::string members;
    for (const auto& member : group.members) {
      std::string events;
      for (const auto& candidate : member.candidates) {
        events += (events.empty() ? "" : ", ") + in_code(candidate.event);
      }
      members += (members.empty() ? "" : "; ") + in_code(member.variable) + ": " +
                 in_code(member.metric) + " (" + events + ")";
    }
    std::string metrics;
    for (const auto& metric : group.metrics) {
      metrics += (metrics.empty() ? "" : "; ") + in_code(metric.name) + ": " +
                 in_code(metric.formula.text());
    }
    table += "| " + in_code(group.name) + " | " + table_cell(group.meaning) + " | " +
             table_cell(members) + " | " + table_cell(metrics) + " | " + table_cell(group.source) +
             " |\n";
  }
  return table;
}

}  // namespace

// Issue 35, item 16: the page listed other events than builtin_groups.cpp tries. Its table is
// this test's output; HWPERF_UPDATE_GOLDEN=1 writes it into the page.
TEST_CASE("docs/collectors/groups.md lists the built-in groups as builtin_groups.cpp defines them",
          "[groups][events]") {
  const std::string path = std::string(HWPERF_SOURCE_DIR) + "/docs/collectors/groups.md";
  const std::string begin =
      "<!-- generated from builtin_groups(): HWPERF_UPDATE_GOLDEN=1 ./build/tests/hwperf_tests "
      "\"docs/collectors/groups.md lists the built-in groups as builtin_groups.cpp defines "
      "them\" rewrites it -->\n";
  const std::string end = "<!-- end of the generated table -->\n";
  std::string page = test::read_file(path);
  const auto from = page.find(begin);
  const auto to = page.find(end);
  REQUIRE(from != std::string::npos);
  REQUIRE(to != std::string::npos);
  REQUIRE(from < to);
  const std::string expected = builtin_groups_table();
  if (std::getenv("HWPERF_UPDATE_GOLDEN") != nullptr) {
    page.replace(from + begin.size(), to - from - begin.size(), expected);
    std::ofstream(path) << page;
    WARN("table of built-in groups rewritten in " + path);
  }
  CHECK(page.substr(from + begin.size(), to - from - begin.size()) == expected);
}

namespace {

// The first ```yaml block after `heading` in a page of the repository.
std::string yaml_example(const std::string& page_path, const std::string& heading) {
  const std::string page = test::read_file(std::string(HWPERF_SOURCE_DIR) + "/" + page_path);
  const std::string fence = "```yaml\n";
  const auto from = page.find(fence, page.find(heading));
  const auto to = from == std::string::npos ? from : page.find("```", from + fence.size());
  if (page.find(heading) == std::string::npos || to == std::string::npos) return "";
  return page.substr(from + fence.size(), to - from - fence.size());
}

}  // namespace

// Issue 37: groups.md's configuration example counted PAPI_L1_DCM, which Debian 12's PAPI 7.0
// defines on no Arm Neoverse core (its papi_events.csv has no arm_n1 ... arm_v2 sections) nor on
// Sapphire Rapids. Every event of the pages' group examples must count on any CPU of either
// architecture: a kernel generic event (libpfm4's perf PMU, on every architecture) or a preset
// counted as one.
TEST_CASE("the documentation's group examples count on every CPU generation", "[groups][events]") {
  const auto [page, heading] = GENERATE(table<std::string, std::string>({
      {"docs/collectors/groups.md", "## Configuration"},
      {"docs/deployment.md", "## arm64"},
  }));
  CAPTURE(page, heading);
  const std::string yaml = yaml_example(page, heading);
  REQUIRE_FALSE(yaml.empty());
  const Config config = parse_config_text(yaml, page);
  REQUIRE_FALSE(config.get<GroupsConfig>().groups.empty());
  std::size_t events = 0;
  for (const auto& group :
       group_definitions(config.get<PapiCollectorConfig>().groups, true, {},
                         config.get<GroupsConfig>().groups, "collectors.papi.groups")) {
    if (group.builtin) continue;
    for (const auto& member : group.members) {
      for (const auto& candidate : member.candidates) {
        CAPTURE(group.name, member.variable, candidate.event);
        const bool generic = to_lower(parse_event_name(candidate.event).pmu) == "perf";
        CHECK((generic || generic_equivalent(candidate.event).has_value()));
        CHECK_NOTHROW(perf::encode_event(candidate.event, CountingDomain::all));
        ++events;
      }
    }
  }
  CHECK(events > 0);
}
