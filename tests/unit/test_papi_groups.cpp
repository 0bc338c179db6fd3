// Event groups in the PAPI collector without hardware: the collector over a fake source whose
// layout holds kernel groups (families shared by name, the `group` label, the groups' enabled and
// running times), sysfs event names encoded from a fixture tree, and the built-in groups' native
// events as libpfm4 encodes them for the server cores of the architecture the tests are built for
// (Intel and AMD on x86-64, Arm Neoverse on arm64: libpfm4 builds only its own architecture's
// tables), through LIBPFM_FORCE_PMU, in a child process since libpfm4 reads it once per process.
#include <linux/perf_event.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "collectors/events/groups.h"
#include "collectors/papi/papi_groups.h"
#include "collectors/perf/pfm_encoder.h"
#include "collectors/perf/pmu_sysfs.h"
#include "config/errors.h"
#include "tests/catch.hpp"
#include "tests/support/support.h"
#include "tests/support/papi_fakes.h"
#include "tests/support/preset_fakes.h"

using namespace hwperf;
using namespace hwperf::test::papi_fakes;

namespace {

// Events: 0 page_faults ungrouped; group g: 1 page_faults, 2 task_clock_seconds, 3 and 4 its
// times; group h: 5 page_faults, 6 and 7 its times. One set per CPU for each.
SourceLayout grouped_layout(const std::vector<unsigned>& cpus) {
  SourceLayout layout;
  const std::vector<std::vector<std::size_t>> sets = {{0}, {1, 2, 3, 4}, {5, 6, 7}};
  for (unsigned cpu : cpus) {
    for (std::size_t s = 0; s < sets.size(); ++s) {
      papi::EventSetInfo set;
      set.cpu = cpu;
      set.index = static_cast<unsigned>(s);
      set.binding = s == 0 ? "qualifier" : "perf_group";
      set.kernel_group = s != 0;
      for (std::size_t event : sets[s]) {
        set.counters.push_back(layout.counters.size());
        layout.counters.push_back({event, cpu});
      }
      layout.event_sets.push_back(std::move(set));
    }
  }
  return layout;
}

std::vector<papi::ExportedGroup> two_groups() {
  return {{"g",
           {spec("perf::PAGE-FAULTS", "page_faults"),
            spec("perf::TASK-CLOCK", "task_clock_seconds", events::Unit::nanoseconds)}},
          {"h", {spec("perf::PAGE-FAULTS", "page_faults")}}};
}

}  // namespace

TEST_CASE("a group's members share the families of their names, with a group label",
          "[papi][groups]") {
  const Topology topology = two_socket_topology();
  const auto granularity = GENERATE(Granularity::cpu, Granularity::package, Granularity::machine);
  CAPTURE(to_string(granularity));
  auto source = std::make_unique<FakeCounterSource>(grouped_layout(topology.cpus()));
  auto* fake = source.get();
  for (std::size_t i = 0; i < fake->values_.size(); ++i) fake->values_[i] = 1000000 + 13 * i;
  auto collector = make_papi_collector_from_source(config_with(granularity),
                                                   {spec("perf::PAGE-FAULTS", "page_faults")},
                                                   topology, std::move(source), {}, two_groups());
  const auto samples = scrape(*collector);
  const std::string level = events::family_level(granularity);

  // The expected sums, from the layout: per family, per group label ("" ungrouped), per series.
  const std::map<std::size_t, std::pair<std::string, std::string>> family_of = {
      {0, {"page_faults", ""}},
      {1, {"page_faults", "g"}},
      {2, {"task_clock_seconds", "g"}},
      {3, {"group_enabled_seconds", "g"}},
      {4, {"group_running_seconds", "g"}},
      {5, {"page_faults", "h"}},
      {6, {"group_enabled_seconds", "h"}},
      {7, {"group_running_seconds", "h"}}};
  std::map<std::pair<std::string, std::string>, double> expected;  // (family, group) -> machine sum
  const auto& layout = fake->layout();
  for (std::size_t i = 0; i < layout.counters.size(); ++i) {
    const auto& [metric, group] = family_of.at(layout.counters[i].event);
    const bool seconds = metric.find("seconds") != std::string::npos;
    expected[{metric, group}] += static_cast<double>(fake->values_[i]) / (seconds ? 1e9 : 1.0);
  }
  for (const auto& [key, sum] : expected) {
    const auto& [metric, group] = key;
    CAPTURE(metric, group);
    const std::string name = "hwperf_" + level + "_" + metric + "_total";
    double total = 0;
    for (const auto& sample : find_samples(samples, name)) {
      const auto it = sample.labels.find("group");
      if ((it == sample.labels.end() ? "" : it->second) == group) total += sample.value;
    }
    CHECK(total == Approx(sum));
  }
  // Each family once among the declared ones, whatever shares it.
  std::set<std::string> declared;
  for (const auto& family : declared_families(*collector)) {
    CHECK(declared.insert(family.name).second);
  }
  CHECK(declared.count("hwperf_" + level + "_group_enabled_seconds_total") == 1);
  // A kernel group's set counts its members, not its times.
  for (const auto& sample : find_samples(samples, "hwperf_papi_event_set_events",
                                         {{"binding", "perf_group"}, {"event_set", "1"}})) {
    CHECK(sample.value == 2);
  }
  // hwperf_papi_event_info lists the configured events, not the groups' members.
  CHECK(find_samples(samples, "hwperf_papi_event_info").size() == 1);
}

TEST_CASE("a member named like another member of its group is refused", "[papi][groups]") {
  const Topology topology = two_socket_topology();
  std::vector<papi::ExportedGroup> groups = {
      {"g", {spec("perf::PAGE-FAULTS", "faults"), spec("perf::MINOR-FAULTS", "faults")}}};
  SourceLayout layout;
  CHECK_THROWS_AS(
      make_papi_collector_from_source(config_with(Granularity::cpu), {}, topology,
                                      std::make_unique<FakeCounterSource>(layout), {}, groups),
      ConfigError);
}

TEST_CASE("sysfs event names are told apart from libpfm4's", "[papi][groups]") {
  const auto [name, sysfs] = GENERATE(table<std::string, bool>({{"cpu/slots/", true},
                                                                {"msr/aperf/", true},
                                                                {"cpu/topdown-retiring/", true},
                                                                {"perf::CYCLES", false},
                                                                {"cpu/slots", false},
                                                                {"/slots/", false},
                                                                {"cpu//", false},
                                                                {"cpu/a/b/", false},
                                                                {"L1D:REPLACEMENT", false}}));
  CAPTURE(name);
  CHECK(perf::is_sysfs_event_name(name) == sysfs);
}

TEST_CASE("a sysfs event is encoded from its PMU's type, description and formats",
          "[papi][groups]") {
  test::TempDir dir;
  const std::string pmu = "bus/event_source/devices/cpu/";
  dir.write(pmu + "type", "4\n");
  dir.write(pmu + "format/event", "config:0-7\n");
  dir.write(pmu + "format/umask", "config:8-15\n");
  dir.write(pmu + "events/topdown-retiring", "event=0x00,umask=0x80\n");
  dir.write(pmu + "events/slots", "event=0x00,umask=0x4\n");
  const auto retiring =
      perf::encode_sysfs_event("cpu/topdown-retiring/", dir.path().string(), CountingDomain::all);
  CHECK(retiring.type == 4);
  CHECK(retiring.config == 0x8000);
  CHECK(retiring.name == "cpu/topdown-retiring/");
  CHECK_FALSE(retiring.exclude_kernel);
  const auto slots =
      perf::encode_sysfs_event("cpu/slots/", dir.path().string(), CountingDomain::user);
  CHECK(slots.config == 0x400);
  CHECK(slots.exclude_kernel);
  CHECK_FALSE(slots.exclude_user);
  CHECK_THROWS_WITH(
      perf::encode_sysfs_event("cpu/topdown-heavy-ops/", dir.path().string(), CountingDomain::all),
      Catch::Contains("has no event topdown-heavy-ops"));
  CHECK_THROWS_WITH(
      perf::encode_sysfs_event("msr/aperf/", dir.path().string(), CountingDomain::all),
      Catch::Contains("the kernel has no PMU named msr"));
}

namespace {

// The native event each built-in member counts first on a server core libpfm4 is made to see
// (LIBPFM_FORCE_PMU), by "group.member": the native event papi_events.csv names there
// (builtin_groups.cpp cites which). A member not listed counts only the kernel's generic, software
// or sysfs events there, which libpfm4 does not encode with a PMU forced.
using NativeChoices = std::map<std::string, std::string>;

#if defined(__aarch64__)
// Arm Neoverse (libpfm4 4.13: lib/events/arm_neoverse_{n1,n2,v1,v2}_events.h; papi_events.csv of
// PAPI 7.1, "CPU,arm_n1" to "CPU,arm_v2"). N1 has no CNT_CYCLES, so freq has no reference there;
// v2's table names the L2 access L2D_CACHE where the others say L2D_CACHE_ACCESS.
NativeChoices neoverse(const std::string& l2_access, bool cnt_cycles) {
  NativeChoices natives = {{"branch.br", "BR_RETIRED"}, {"branch.miss", "BR_MIS_PRED_RETIRED"},
                           {"l1d.access", "L1D_CACHE"}, {"l1d.miss", "L1D_CACHE_REFILL"},
                           {"l2.access", l2_access},    {"l2.miss", "L2D_CACHE_REFILL"}};
  if (cnt_cycles) natives["freq.ref"] = "CNT_CYCLES";
  return natives;
}
const std::map<std::string, NativeChoices>& forced_pmus() {
  static const std::map<std::string, NativeChoices> pmus = {
      {"arm_n1", neoverse("L2D_CACHE_ACCESS", false)},
      {"arm_n2", neoverse("L2D_CACHE_ACCESS", true)},
      {"arm_v1", neoverse("L2D_CACHE_ACCESS", true)},
      {"arm_v2", neoverse("L2D_CACHE", true)}};
  return pmus;
}
// Arm's common event numbers, which libpfm4 encodes as raw events (the Arm Architecture Reference
// Manual's PMU event list; the kernel's ARMV8_PMUV3_PERFCTR_* in include/linux/perf/arm_pmuv3.h).
const std::map<std::string, std::uint64_t>& arm_event_numbers() {
  static const std::map<std::string, std::uint64_t> numbers = {
      {"L1D_CACHE_REFILL", 0x03},    {"L1D_CACHE", 0x04},        {"L2D_CACHE", 0x16},
      {"L2D_CACHE_ACCESS", 0x16},    {"L2D_CACHE_REFILL", 0x17}, {"BR_RETIRED", 0x21},
      {"BR_MIS_PRED_RETIRED", 0x22}, {"CNT_CYCLES", 0x4004}};
  return numbers;
}
#else
// Intel and AMD servers (papi_events.csv of PAPI 7.0: "CPU,icx" and "CPU,amd64_fam19h_zen3").
NativeChoices intel() {
  return {{"l1d.access", "MEM_INST_RETIRED:ANY"},
          {"l1d.miss", "L1D:REPLACEMENT"},
          {"l2.access", "L2_RQSTS:ALL_DEMAND_REFERENCES"},
          {"l2.miss", "L2_RQSTS:ALL_DEMAND_MISS"}};
}
NativeChoices amd(bool change_to_x) {
  const std::string l2_requests =
      std::string("REQUESTS_TO_L2_GROUP1:RD_BLK_L:RD_BLK_X:LS_RD_BLK_C_S") +
      (change_to_x ? ":CHANGE_TO_X" : "");
  return {{"l1d.access", "LS_DISPATCH:LD_ST_DISPATCH:STORE_DISPATCH:LD_DISPATCH"},
          {"l1d.miss", l2_requests},
          {"l2.access", l2_requests},
          {"l2.miss", "CORE_TO_L2_CACHEABLE_REQUEST_ACCESS_STATUS:LS_RD_BLK_C"}};
}
const std::map<std::string, NativeChoices>& forced_pmus() {
  static const std::map<std::string, NativeChoices> pmus = {{"icx", intel()},
                                                            {"spr", intel()},
                                                            {"amd64_fam19h_zen4", amd(true)},
                                                            {"amd64_fam1ah_zen5", amd(false)}};
  return pmus;
}
#endif

}  // namespace

// In the child: the first candidate of every built-in member that libpfm4 encodes when it is made
// to see LIBPFM_FORCE_PMU's PMU.
TEST_CASE("(child) built-in members encode their native events first", "[.forced_pmu_child]") {
  const char* pmu = std::getenv("LIBPFM_FORCE_PMU");
  REQUIRE(pmu != nullptr);
  REQUIRE(forced_pmus().count(pmu) == 1);
  const NativeChoices& expected = forced_pmus().at(pmu);
  NativeChoices chosen;
  for (const auto& group : events::builtin_groups()) {
    for (const auto& member : group.members) {
      for (const auto& candidate : member.candidates) {
        try {
          const auto encoding = perf::encode_event(candidate.event, CountingDomain::all);
#if defined(__aarch64__)
          // A Neoverse event is Arm's common event number, counted as a raw event.
          CAPTURE(candidate.event);
          CHECK(encoding.type == PERF_TYPE_RAW);
          CHECK(encoding.config == arm_event_numbers().at(candidate.event));
#endif
          chosen[group.name + "." + member.variable] = candidate.event;
          break;
        } catch (const std::invalid_argument&) {
        }
      }
    }
  }
  CHECK(chosen == expected);
}

TEST_CASE("built-in groups count native events on the server cores of this architecture",
          "[papi][groups]") {
#if defined(__aarch64__)
  const auto pmu = GENERATE(as<std::string>{}, "arm_n1", "arm_n2", "arm_v1", "arm_v2");
#else
  const auto pmu =
      GENERATE(as<std::string>{}, "icx", "spr", "amd64_fam19h_zen4", "amd64_fam1ah_zen5");
#endif
  CAPTURE(pmu);
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  // Under scripts/arm64-test.sh the binary runs in qemu-user, which the child needs too.
  const char* emulator = std::getenv("HWPERF_TEST_EMULATOR");
  int exit_code = -1;
  const std::string out =
      test::run_shell("LIBPFM_FORCE_PMU=" + pmu + " " + (emulator != nullptr ? emulator : "") +
                          " '" + self + "' '[.forced_pmu_child]'",
                      &exit_code);
  INFO(out);
  CHECK(exit_code == 0);
  CHECK_THAT(out, Catch::Contains("1 test case"));
}

// The kernel refuses exclude_idle on arm64 (armv8pmu_set_event_filter in drivers/perf/arm_pmuv3.c
// returns -EPERM for it; scylladb/seastar#2298), so nothing the exporter or the marker library
// opens may set it. (PAPI 7.0's perf_event component sets only exclude_user, exclude_kernel,
// exclude_hv and exclude_guest: src/components/perf_event/perf_event.c.)
TEST_CASE("no perf_event_attr the exporter or the marker library opens sets exclude_idle",
          "[papi][groups]") {
  const std::regex sets_it(R"(exclude_idle\s*=)");
  const std::string root = HWPERF_SOURCE_DIR;
  std::vector<std::string> setting;  // "path:line: text"
  bool saw_attr_builder = false;
  for (const char* folder : {"collectors", "markers", "common", "exporter"}) {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root + "/" + folder)) {
      const std::string extension = entry.path().extension().string();
      if (extension != ".cpp" && extension != ".c" && extension != ".h") continue;
      const std::string path = entry.path().string().substr(root.size() + 1);
      saw_attr_builder = saw_attr_builder || path == "collectors/perf/perf_event.cpp";
      std::ifstream in(entry.path());
      std::size_t number = 0;
      for (std::string line; std::getline(in, line);) {
        ++number;
        if (std::regex_search(line, sets_it)) {
          setting.push_back(path + ":" + std::to_string(number) + ": " + line);
        }
      }
    }
  }
  CHECK(saw_attr_builder);  // the walk read the file that fills perf_event_attr
  CHECK(setting == std::vector<std::string>{});
}

namespace {

// PAPI_X_ONE is one native event (a software event, so that it opens anywhere), PAPI_X_SUM three.
const test::FakePresets& fake_catalog() {
  static const test::FakePresets catalog(
      {{"PAPI_X_ONE", events::PresetDefinition{true, true, 1, {{{"perf::PAGE-FAULTS", 1}}, ""}}},
       {"PAPI_X_SUM",
        events::PresetDefinition{
            true,
            true,
            3,
            {{{"perf::PAGE-FAULTS", 1}, {"perf::MINOR-FAULTS", 1}, {"perf::MAJOR-FAULTS", 1}},
             ""}}}});
  return catalog;
}

}  // namespace

TEST_CASE("a preset member is its one native event, and a derived one cannot be a member",
          "[papi][groups]") {
  const auto& catalog = fake_catalog();
  papi::GroupProbe probe;
  probe.presets = &catalog;
  const auto one = papi::encode_member("PAPI_X_ONE", probe);
  const auto native = perf::encode_event("perf::PAGE-FAULTS", CountingDomain::all);
  CHECK(one.name == "PAPI_X_ONE");
  CHECK(one.type == native.type);
  CHECK(one.config == native.config);
  CHECK_THROWS_WITH(papi::encode_member("PAPI_X_SUM", probe),
                    Catch::Contains("PAPI derives PAPI_X_SUM here from 3 native events") &&
                        Catch::Contains("one kernel counter"));
  // A preset PAPI cannot define here is counted as its exact generic equivalent.
  const auto generic = papi::encode_member("PAPI_TOT_INS", probe);
  CHECK(generic.config == perf::encode_event("perf::INSTRUCTIONS", CountingDomain::all).config);
}

TEST_CASE(
    "a user group with a member this machine cannot count is refused naming where, the "
    "member, the event and why",
    "[papi][groups][kernel_perf]") {
  const auto& catalog = fake_catalog();
  papi::GroupProbe probe;
  probe.presets = &catalog;
  events::GroupDefinition group;
  group.name = "mine";
  group.where = "hwperf.yml:7:9: collectors.papi.groups";
  group.members = {{"faults", "page_faults", events::Unit::count, {}},
                   {"sum", "x_sum", events::Unit::count, {}}};
  group.members[0].candidates.resize(1);
  group.members[0].candidates[0].event = "perf::PAGE-FAULTS";
  group.members[1].candidates.resize(1);
  group.members[1].candidates[0].event = "PAPI_X_SUM";
  CHECK_THROWS_WITH(papi::countable_groups({group}, probe, false),
                    Catch::Contains("hwperf.yml:7:9: collectors.papi.groups: group mine cannot be "
                                    "counted here: sum (PAPI_X_SUM: PAPI derives PAPI_X_SUM"));
  // As a default group it is skipped, never split.
  CHECK(papi::countable_groups({group}, probe, true).empty());
}

// arm64's core PMU is armv8_pmuv3_N (or armv8_neoverse_*, armv9_*), not x86's cpu: a member that
// fails to open there is not a machine without a hardware PMU. The event's PMU type is one no
// kernel has, so the open fails everywhere.
TEST_CASE("a member that cannot open on arm64's core PMU is not blamed on a missing PMU",
          "[papi][groups][kernel_perf]") {
  const auto reason_with = [](const std::string& pmu_name) {
    test::TempDir dir;
    const std::string pmu = "bus/event_source/devices/" + pmu_name + "/";
    dir.write(pmu + "type", "99999\n");
    dir.write(pmu + "format/event", "config:0-15\n");
    dir.write(pmu + "events/cpu_cycles", "event=0x11\n");
    papi::GroupProbe probe;
    probe.presets = &fake_catalog();
    probe.paths.sysfs = dir.path().string();
    events::GroupDefinition group;
    group.name = "mine";
    group.members = {{"cycles", "cycles", events::Unit::count, {}}};
    group.members[0].candidates.resize(1);
    group.members[0].candidates[0].event = pmu_name + "/cpu_cycles/";
    return papi::plan_group(group, probe).unavailable;
  };
  const std::string on_arm = reason_with("armv8_pmuv3_0");
  CHECK_FALSE(on_arm.empty());
  CHECK_THAT(on_arm, !Catch::Contains("this machine has no hardware PMU") &&
                         Catch::Contains("the kernel cannot count it on this CPU"));
  CHECK_THAT(reason_with("armv9_neoverse_v2"),
             !Catch::Contains("this machine has no hardware PMU"));
  // An uncore PMU alone is no core PMU.
  CHECK_THAT(reason_with("arm_cmn_0"), Catch::Contains("this machine has no hardware PMU"));
}
