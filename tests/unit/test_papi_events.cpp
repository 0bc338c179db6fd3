// The PAPI collector's pure parts: metric naming, units, qualifiers, CPU selection and the
// validation of configured events. No PAPI, no PMU.
#include "tests/catch.hpp"
#include <map>
#include <set>
#include <string>
#include <vector>

#include "collectors/events/event_specs.h"
#include "collectors/papi/papi_factory.h"
#include "config/errors.h"
#include "topology/topology.h"

#include "tests/support/support.h"

using namespace hwperf;
using namespace hwperf::papi;
using namespace hwperf::events;
using hwperf::test::two_socket_topology;

namespace {

EventSpec event_at(const std::string& name, int line, const std::string& metric = "",
                   const std::string& help = "") {
  EventSpec event;
  event.event = name;
  event.metric = metric;
  event.help = help;
  event.mark = {"hwperf.yml", line, 9};
  return event;
}

std::string no_description(const std::string&) { return ""; }

std::vector<std::string> problems_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const ConfigError& e) {
    return e.problems();
  }
  return {};
}

}  // namespace

TEST_CASE("common presets get the readable names the issue promises", "[papi]") {
  const auto [event, metric] = GENERATE(table<std::string, std::string>({
      {"PAPI_TOT_INS", "instructions"},
      {"PAPI_TOT_CYC", "cycles"},
      {"PAPI_L1_DCM", "l1_data_cache_misses"},
  }));
  CAPTURE(event);
  CHECK(default_metric_base(event) == metric);
  CHECK(event_unit(event) == Unit::count);
}

TEST_CASE("events whose snake_case would repeat the CPU level are named without it", "[papi]") {
  // hwperf_cpu_clock_seconds_total, not hwperf_cpu_cpu_clock_seconds_total.
  const auto [event, metric] = GENERATE(table<std::string, std::string>({
      {"perf::CPU-CLOCK", "clock_seconds"},
      {"perf::cpu-clock:u", "clock_u_seconds"},
      {"perf::CPU-MIGRATIONS", "migrations"},
      {"perf::MIGRATIONS", "migrations"},
      {"perf::TASK-CLOCK", "task_clock_seconds"},
  }));
  CAPTURE(event);
  CHECK(default_metric_base(event) == metric);
  CHECK(metric.rfind("cpu_", 0) == std::string::npos);
}

TEST_CASE("other events are named by their snake_case without the PMU prefix", "[papi]") {
  const auto [event, metric] = GENERATE(table<std::string, std::string>({
      {"perf::PAGE-FAULTS", "page_faults"},
      {"perf::CONTEXT-SWITCHES", "context_switches"},
      {"perf::CYCLES:u", "cycles_u"},
      {"icl::MEM_LOAD_RETIRED:L1_MISS", "mem_load_retired_l1_miss"},
      {"PAPI_FUL_ICY", "ful_icy"},  // a preset without a readable name keeps its own
  }));
  CAPTURE(event);
  CHECK(default_metric_base(event) == metric);
}

TEST_CASE("perf's clock events are nanoseconds and named in seconds", "[papi]") {
  const auto event = GENERATE(as<std::string>{}, "perf::CPU-CLOCK", "perf::TASK-CLOCK",
                              "perf::cpu-clock", "perf::CPU-CLOCK:u");
  CAPTURE(event);
  CHECK(event_unit(event) == Unit::nanoseconds);
  const std::string metric = default_metric_base(event);
  CHECK(metric.size() > 8);
  CHECK(metric.substr(metric.size() - 8) == "_seconds");
  // Only perf's own PMU has them: another PMU's CPU-CLOCK is just a count.
  CHECK(event_unit("other::CPU-CLOCK") == Unit::count);
}

TEST_CASE("event names split into PMU, base and qualifiers", "[papi]") {
  const EventName native = parse_event_name("icl::MEM_LOAD_RETIRED:L1_MISS:u=1");
  CHECK(native.pmu == "icl");
  CHECK(native.base == "MEM_LOAD_RETIRED");
  CHECK(native.qualifiers == std::vector<std::string>{"L1_MISS", "u=1"});
  const EventName preset = parse_event_name("PAPI_TOT_INS");
  CHECK(preset.pmu.empty());
  CHECK(preset.base == "PAPI_TOT_INS");
  CHECK(preset.qualifiers.empty());
  CHECK(is_preset("PAPI_TOT_INS"));
  CHECK_FALSE(is_preset("perf::PAGE-FAULTS"));
}

TEST_CASE("the qualifier binding adds cpu= and the configured domain", "[papi]") {
  const auto [domain, suffix] = GENERATE(table<CountingDomain, std::string>({
      {CountingDomain::all, ":u=1:k=1"},
      {CountingDomain::user, ":u=1:k=0"},
      {CountingDomain::kernel, ":u=0:k=1"},
  }));
  CHECK(cpu_qualified_name("perf::PAGE-FAULTS", 3, domain) == "perf::PAGE-FAULTS:cpu=3" + suffix);
  // A domain written into the event name is the user's choice and wins.
  CHECK(cpu_qualified_name("perf::CYCLES:u", 1, domain) == "perf::CYCLES:u:cpu=1");
  CHECK(has_domain_qualifier("perf::CYCLES:k=1"));
  CHECK_FALSE(has_domain_qualifier("icl::MEM_LOAD_RETIRED:L1_MISS"));
}

TEST_CASE("an event's own u/k qualifiers select its domain as libpfm4 reads them", "[papi]") {
  const auto [event, user, kernel] = GENERATE(table<std::string, bool, bool>({
      {"perf::CYCLES:u", true, false},
      {"perf::CYCLES:k", false, true},
      {"perf::CYCLES:u=1:k=1", true, true},
      {"perf::CYCLES:U=Y:K=n", true, false},
      {"perf::CYCLES:k=t", false, true},
      {"perf::CYCLES:u=0:k=1", false, true},
      {"perf::CYCLES:u=0", false, false},  // only the levels set are counted: none
      {"icl::MEM_LOAD_RETIRED:L1_MISS:u", true, false},
  }));
  CAPTURE(event);
  const auto domain = qualified_domain(event);
  REQUIRE(domain.has_value());
  CHECK(domain->user == user);
  CHECK(domain->kernel == kernel);
  CHECK_FALSE(qualified_domain("perf::CYCLES").has_value());
  CHECK_FALSE(qualified_domain("icl::MEM_LOAD_RETIRED:L1_MISS").has_value());
  CHECK_FALSE(qualified_domain("PAPI_TOT_CYC").has_value());
}

TEST_CASE("each granularity has its own family name", "[papi]") {
  ExportedEvent spec;
  spec.event = "PAPI_TOT_INS";
  spec.metric = "instructions";
  CHECK(counter_family_name(Granularity::cpu, spec) == "hwperf_cpu_instructions_total");
  CHECK(counter_family_name(Granularity::core, spec) == "hwperf_core_instructions_total");
  CHECK(counter_family_name(Granularity::package, spec) == "hwperf_package_instructions_total");
  CHECK(counter_family_name(Granularity::machine, spec) == "hwperf_machine_instructions_total");
}

TEST_CASE("configured metric names and help are used; clock metrics stay in seconds", "[papi]") {
  const auto specs = resolve_event_specs(
      {event_at("perf::PAGE-FAULTS", 3, "faults", "Faults taken"),
       event_at("perf::CPU-CLOCK", 4, "busy"), event_at("PAPI_TOT_INS", 5)},
      false, Granularity::cpu, [](const std::string& name) {
        return name == "PAPI_TOT_INS" ? std::string("Instructions completed") : std::string();
      });
  REQUIRE(specs.size() == 3);
  CHECK(specs[0].metric == "faults");
  CHECK(specs[0].description == "Faults taken");
  CHECK(specs[1].metric == "busy_seconds");
  CHECK(specs[1].unit == Unit::nanoseconds);
  CHECK(specs[2].metric == "instructions");
  CHECK(specs[2].description == "Instructions completed");
  for (const auto& spec : specs) CHECK_FALSE(spec.is_default);
}

TEST_CASE("every naming problem is reported at once, each with its place", "[papi]") {
  const auto problems = problems_of([] {
    resolve_event_specs({event_at("PAPI_TOT_INS", 3), event_at("perf::CYCLES:cpu=1", 4),
                         event_at("perf::PAGE-FAULTS", 5, "faults_total"),
                         event_at("perf::INSTRUCTIONS", 6, "instructions")},
                        false, Granularity::cpu, no_description);
  });
  REQUIRE(problems.size() == 3);
  CHECK_THAT(problems[0], Catch::Contains("hwperf.yml:4:9") && Catch::Contains("cpu=") &&
                              Catch::Contains("collectors.papi.cpus"));
  CHECK_THAT(problems[1], Catch::Contains("hwperf.yml:5:9") && Catch::Contains("_total"));
  // The clash names both events and both places.
  CHECK_THAT(problems[2], Catch::Contains("hwperf.yml:6:9") && Catch::Contains("hwperf.yml:3:9") &&
                              Catch::Contains("PAPI_TOT_INS") &&
                              Catch::Contains("hwperf_cpu_instructions_total"));
}

TEST_CASE("the default event set resolves to distinct valid names at every granularity", "[papi]") {
  const auto granularity =
      GENERATE(Granularity::cpu, Granularity::core, Granularity::package, Granularity::machine);
  const auto defaults = default_events();
  REQUIRE_FALSE(defaults.empty());
  const auto specs = resolve_event_specs(defaults, true, granularity, no_description);
  CHECK(specs.size() == defaults.size());
  std::set<std::string> names;
  for (const auto& spec : specs) {
    CHECK(spec.is_default);
    CHECK_FALSE(spec.description.empty());
    names.insert(counter_family_name(granularity, spec));
  }
  CHECK(names.size() == specs.size());
}

TEST_CASE("CPU lists select CPUs from the topology", "[papi]") {
  const Topology topology = two_socket_topology();
  PapiCollectorConfig config;
  const SourceMark mark{"hwperf.yml", 4, 11};

  config.cpus = {true, {}, mark};
  CHECK(select_cpus(config, topology) == topology.cpus());

  const std::vector<unsigned> some = {0, 1, 5};
  config.cpus = {false, some, mark};
  CHECK(select_cpus(config, topology) == some);

  // The list was parsed when the configuration was read; here only the topology can refuse it.
  config.cpus = {false, {6, 7, 8, 9}, mark};
  auto problems = problems_of([&] { select_cpus(config, topology); });
  REQUIRE(problems.size() == 1);
  CHECK_THAT(problems[0], Catch::Contains("hwperf.yml:4:11") && Catch::Contains("8-9") &&
                              Catch::Contains("0-7"));
}

TEST_CASE("qualifiers that make libpfm4 sample are found, and refused naming where", "[papi]") {
  const auto [event, found] = GENERATE(table<std::string, std::string>({
      {"perf::PAGE-FAULTS:period=10000", "period=10000"},
      {"perf::CPU-CLOCK:u:freq=1", "freq=1"},
      {"icl::INST_RETIRED:ANY_P:HW_SMPL", "HW_SMPL"},
      {"perf::PAGE-FAULTS:u=1", ""},
      {"PAPI_TOT_INS", ""},
  }));
  CAPTURE(event);
  const auto sampling = sampling_qualifier(event);
  CHECK(sampling.value_or("") == found);
  if (found.empty()) return;
  EventSpec config;
  config.event = event;
  config.mark = {"/etc/hwperf.yml", 7, 11};
  const auto problems = problems_of([&] {
    resolve_event_specs({config}, false, Granularity::cpu,
                        [](const std::string&) { return std::string(); });
  });
  REQUIRE(problems.size() == 1);
  CHECK_THAT(problems.front(), Catch::StartsWith("/etc/hwperf.yml:7:11: ") &&
                                   Catch::Contains(found) && Catch::Contains("remove it"));
}

TEST_CASE("the descriptors a CPU's events take count every native term of a derived preset",
          "[papi]") {
  const std::map<std::string, unsigned> terms = {
      {"PAPI_FP_OPS", 3}, {"PAPI_TOT_INS", 1}, {"perf::PAGE-FAULTS", 1}, {"PAPI_L1_TCM", 0}};
  const auto native_terms = [&](const std::string& event) { return terms.at(event); };
  CHECK(descriptors_per_cpu({"PAPI_TOT_INS", "perf::PAGE-FAULTS"}, native_terms) == 2);
  CHECK(descriptors_per_cpu({"PAPI_FP_OPS", "PAPI_TOT_INS"}, native_terms) == 3 + 1);
  // An event that reports no terms still opens one descriptor.
  CHECK(descriptors_per_cpu({"PAPI_L1_TCM"}, native_terms) == 1);
  CHECK(descriptors_per_cpu({}, native_terms) == 0);
}
