// Counting on every CPU generation, without a PMU at hand: which event a preset is counted as,
// how the portable default set is named, and what the log says when PAPI cannot start. Driven
// by what PAPI reports, through fakes of its answers.
#include "tests/catch.hpp"

#include <map>
#include <optional>
#include <set>
#include <string>

#include "collectors/papi/papi_diagnosis.h"
#include "collectors/events/event_specs.h"
#include "collectors/events/groups.h"
#include "collectors/papi/papi_factory.h"

using namespace hwperf;
using namespace hwperf::papi;
using namespace hwperf::events;

namespace {

// PAPI's answers for one machine: which names it knows and which presets it defines here.
struct FakePapi {
  std::set<std::string> known;
  std::set<std::string> defined;
  EventStatus operator()(const std::string& name) const {
    return {known.count(name) > 0, defined.count(name) > 0};
  }
};

}  // namespace

TEST_CASE(
    "a preset this PAPI does not define here is counted as the generic event of the same "
    "meaning",
    "[papi][portability]") {
  // Sapphire Rapids with PAPI 7.0.0: every preset is known, none is defined; the kernel's
  // generic events are known through libpfm4's perf PMU.
  const auto [preset, generic] = GENERATE(table<std::string, std::string>({
      {"PAPI_TOT_INS", "perf::INSTRUCTIONS"},
      {"PAPI_TOT_CYC", "perf::CYCLES"},
      {"PAPI_REF_CYC", "perf::REF-CYCLES"},
      {"PAPI_BR_INS", "perf::BRANCH-INSTRUCTIONS"},
      {"PAPI_BR_MSP", "perf::BRANCH-MISSES"},
  }));
  CAPTURE(preset);
  FakePapi sapphire_rapids{{preset, generic}, {}};
  CHECK(choose_counted_as(preset, sapphire_rapids) == generic);
  // The name stays the preset's, so dashboards do not care which one counts.
  CHECK(default_metric_base(preset) == default_metric_base(generic));

  // Where PAPI defines the preset (Ice Lake-SP), the preset itself is counted.
  FakePapi ice_lake{{preset, generic}, {preset}};
  CHECK(choose_counted_as(preset, ice_lake) == preset);
  // A generic event PAPI does not know (its perf_event component without libpfm4's perf PMU)
  // is no way out: the preset stays, and is dropped with PAPI's reason when opened.
  FakePapi no_generic{{preset}, {}};
  CHECK(choose_counted_as(preset, no_generic) == preset);
}

TEST_CASE("cache presets and other events are never substituted", "[papi][portability]") {
  const auto event =
      GENERATE(as<std::string>{}, "PAPI_L1_DCM", "PAPI_L2_TCM", "PAPI_L3_TCM", "PAPI_L3_TCA",
               "PAPI_FP_OPS", "perf::CACHE-MISSES", "perf::PAGE-FAULTS");
  CAPTURE(event);
  // Everything known, nothing defined, and every generic event on offer.
  FakePapi papi{{event, "perf::CACHE-MISSES", "perf::CACHE-REFERENCES", "perf::INSTRUCTIONS"}, {}};
  CHECK(choose_counted_as(event, papi) == event);
  CHECK_FALSE(generic_equivalent(event).has_value());
}

TEST_CASE("the default set is the kernel's generic and software events, named like the presets",
          "[papi][portability]") {
  std::set<std::string> names;
  for (const auto& event : default_events()) {
    CAPTURE(event.event);
    CHECK(event.event.rfind("perf::", 0) == 0);
    CHECK_FALSE(is_preset(event.event));
    names.insert(default_metric_base(event.event));
  }
  CHECK(names.size() == default_events().size());
  // The generic events with a preset twin are counted in the default groups (ipc, branch, freq),
  // each member exported under the twin's name.
  std::map<std::string, std::string> member_metrics;  // generic event -> member metric
  for (const auto& group : group_definitions({}, false, default_group_names(), {}, "")) {
    for (const auto& member : group.members) {
      for (const auto& candidate : member.candidates) {
        member_metrics.emplace(candidate.event, member.metric);
      }
    }
  }
  for (const char* preset :
       {"PAPI_TOT_INS", "PAPI_TOT_CYC", "PAPI_REF_CYC", "PAPI_BR_INS", "PAPI_BR_MSP"}) {
    CAPTURE(preset);
    const auto generic = generic_equivalent(preset);
    REQUIRE(generic.has_value());
    REQUIRE(member_metrics.count(*generic) == 1);
    CHECK(member_metrics.at(*generic) == default_metric_base(preset));
    CHECK(member_metrics.at(*generic) == default_metric_base(*generic));
  }
  // perf's aliases count the same thing and get the same name.
  CHECK(default_metric_base("perf::CPU-CYCLES") == default_metric_base("perf::CYCLES"));
  CHECK(default_metric_base("perf::BRANCHES") == default_metric_base("perf::BRANCH-INSTRUCTIONS"));
  CHECK_FALSE(builtin_description("perf::CACHE-MISSES").empty());
}

namespace {

ComponentReport report_with(const std::string& disabled_reason) {
  ComponentReport report;
  report.disabled_reason = disabled_reason;
  report.libpfm_path = "/usr/lib/x86_64-linux-gnu/libpfm.so.4.13.0";
  report.papi_version = "7.0.0.0";
  report.cpu_vendor = "GenuineIntel";
  report.cpu_model_name = "INTEL(R) XEON(R) PLATINUM 8581C";
  report.cpu_family = 6;
  report.cpu_model = 207;
  report.paranoid = "2";
  return report;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("when PAPI cannot start, the log names the real cause and its remedy",
          "[papi][portability]") {
  // The disabled_reason strings are PAPI 7.0.0's own (perf_event.c, _pe_init_component and
  // _pe_handle_paranoid); the expected reason follows from which step failed.
  struct Row {
    const char* papi_says;
    bool forced;
    const char* reason;
    const char* remedy_part;
  };
  const auto row = GENERATE(values<Row>({
      {"Error libpfm4 no default PMU found", false, "unknown_cpu", "Debian 13's libpfm4"},
      {"Error libpfm4 no PMUs found", false, "unknown_cpu", "LIBPFM_FORCE_PMU"},
      {"Error libpfm4 no PMUs found", true, "forced_pmu_unknown", "Unset LIBPFM_FORCE_PMU"},
      {"perf_event support disabled by Linux with paranoid=3", false, "permission_denied",
       "sysctl kernel.perf_event_paranoid=0"},
      {"perf_event support not detected", false, "no_perf_event", "/proc"},
      {"Error initializing mmtimer", false, "component_disabled", "papi_component_avail"},
  }));
  CAPTURE(row.papi_says, row.forced);
  ComponentReport report = report_with(row.papi_says);
  if (row.forced) report.forced_pmu = "no_such_pmu";
  const Unavailable verdict = diagnose_component(report);
  CHECK(verdict.reason == row.reason);
  CHECK(contains(verdict.message, row.papi_says));
  CHECK(contains(verdict.message, row.remedy_part));
  CHECK(contains(verdict.message, "PAPI " + report.papi_version));
  if (row.forced) CHECK(contains(verdict.message, "LIBPFM_FORCE_PMU=" + *report.forced_pmu));

  const std::string cpu =
      "family " + std::to_string(report.cpu_family) + " model " + std::to_string(report.cpu_model);
  const bool about_the_cpu = verdict.reason == "unknown_cpu" ||
                             verdict.reason == "forced_pmu_unknown" ||
                             verdict.reason == "component_disabled";
  // The CPU and the libpfm4 in use matter only where libpfm4 is the cause; the paranoid level
  // only where permissions are.
  CHECK(contains(verdict.message, cpu) == about_the_cpu);
  CHECK(contains(verdict.message, report.libpfm_path) == about_the_cpu);
  CHECK(contains(verdict.message, "perf_event_paranoid") ==
        (verdict.reason == "permission_denied" || verdict.reason == "no_perf_event"));
  CHECK(contains(verdict.message, "(it is " + report.paranoid + " here)") ==
        (verdict.reason == "permission_denied"));
}

TEST_CASE("the CPU is described by vendor, family and model, in decimal and hex",
          "[papi][portability]") {
  ComponentReport report = report_with("");
  const auto [family, model, hex] =
      GENERATE(table<int, int, std::string>({{6, 207, "0xcf"}, {6, 173, "0xad"}, {26, 2, "0x2"}}));
  report.cpu_family = family;
  report.cpu_model = model;
  const std::string text = describe_cpu(report);
  CHECK(contains(text, report.cpu_vendor + " family " + std::to_string(family) + " model " +
                           std::to_string(model) + " (" + hex));
  CHECK(contains(text, report.cpu_model_name));
}

namespace {

// The part of PAPI_component_info_t the fast read decision touches, laid out the same way.
struct FakeComponentInfo {
  unsigned int fast_counter_read : 1;
};

constexpr int papi_version(int major, int minor, int revision) {
  return (major << 24) | (minor << 16) | (revision << 8);
}

}  // namespace

TEST_CASE("PAPI before 7.1 gets its rdpmc fast read turned off before any event set",
          "[papi][portability]") {
  // Debian 12's PAPI and its patch release: rdpmc would read the scraping CPU's counters.
  for (const int version : {papi_version(7, 0, 0), papi_version(7, 0, 1), papi_version(6, 0, 0)}) {
    CAPTURE(version);
    FakeComponentInfo info{1};
    const auto note = turn_off_unsafe_fast_read(version, info);
    CHECK(info.fast_counter_read == 0);
    REQUIRE(note.has_value());
    CHECK_THAT(*note, Catch::Contains("rdpmc") && Catch::Contains("7.1.0"));
  }
  // PAPI 7.1 and later already use read() for system-wide sets: the flag is left to PAPI.
  for (const int version : {papi_version(7, 1, 0), papi_version(7, 2, 0), papi_version(8, 0, 0)}) {
    CAPTURE(version);
    FakeComponentInfo info{1};
    CHECK_FALSE(turn_off_unsafe_fast_read(version, info).has_value());
    CHECK(info.fast_counter_read == 1);
  }
  // Without rdpmc (no PMU, as in a VM) there is nothing to turn off and nothing to say.
  FakeComponentInfo off{0};
  CHECK_FALSE(turn_off_unsafe_fast_read(papi_version(7, 0, 0), off).has_value());
  CHECK(off.fast_counter_read == 0);
}
