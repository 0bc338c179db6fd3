// The PAPI collector driven by a fake counter source (papi_fakes.h): families, labels, aggregation
// at every granularity, units, the monotonic guard, status metrics, HELP and a failing source.
// Expected values are computed here from what the fake source was given. Failures and
// concurrency are in test_papi_failures.cpp.
#include <algorithm>
#include <atomic>
#include <chrono>
#include "tests/catch.hpp"
#include <map>
#include <mutex>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "collectors/collector_set.h"
#include "common/cpu_list.h"
#include "collectors/metrics.h"
#include "collectors/papi/papi_collector.h"
#include "collectors/topology/topology_collector.h"
#include "config/errors.h"
#include "exporter/exposition.h"
#include "tests/support/support.h"
#include "tests/support/papi_fakes.h"
#include "topology/topology.h"

using namespace hwperf;
using namespace hwperf::test::papi_fakes;

TEST_CASE("per-CPU families carry cpu, core, package and numa_node", "[papi]") {
  const Topology topology = two_socket_topology();
  auto source =
      std::make_unique<FakeCounterSource>(papi::every_event_on_every_cpu(2, topology.cpus()));
  auto* fake = source.get();
  // Distinct values per counter so that a label mix-up cannot go unnoticed.
  for (std::size_t i = 0; i < fake->values_.size(); ++i) fake->values_[i] = 1000 + 7 * i;
  auto collector = make_papi_collector_from_source(
      config_with(Granularity::cpu),
      {spec("PAPI_TOT_INS", "instructions"), spec("perf::PAGE-FAULTS", "page_faults")}, topology,
      std::move(source));
  CHECK(collector->name() == "papi");

  const auto samples = scrape(*collector);
  const auto& layout = fake->layout();
  const char* families[] = {"hwperf_cpu_instructions_total", "hwperf_cpu_page_faults_total"};
  for (std::size_t i = 0; i < layout.counters.size(); ++i) {
    const auto& counter = layout.counters[i];
    const HardwareThread* thread = topology.find(counter.cpu);
    REQUIRE(thread != nullptr);
    const auto found =
        find_samples(samples, families[counter.event], {{"cpu", std::to_string(thread->cpu)}});
    REQUIRE(found.size() == 1);
    CHECK(found[0].labels.at("core") == std::to_string(thread->core));
    CHECK(found[0].labels.at("package") == std::to_string(thread->package));
    CHECK(found[0].labels.at("numa_node") == std::to_string(thread->numa_node));
    CHECK(found[0].value == static_cast<double>(fake->values_[i]));
  }
  CHECK(find_samples(samples, "hwperf_cpu_instructions_total").size() == topology.cpus().size());
}

TEST_CASE("a machine without NUMA information gets an empty numa_node label", "[papi]") {
  const Topology topology({{0, 0, 0, -1}, {1, 1, 0, -1}}, {}, "test: no NUMA");
  auto collector = make_papi_collector_from_source(
      config_with(Granularity::cpu), {spec("PAPI_TOT_INS", "instructions")}, topology,
      std::make_unique<FakeCounterSource>(papi::every_event_on_every_cpu(1, topology.cpus())));
  const auto samples = find_samples(scrape(*collector), "hwperf_cpu_instructions_total");
  REQUIRE(samples.size() == 2);
  for (const auto& sample : samples) {
    const auto it = sample.labels.find("numa_node");
    CHECK((it == sample.labels.end() || it->second.empty()));
  }
}

TEST_CASE("every granularity sums the right CPUs under the right labels", "[papi]") {
  const Topology topology = two_socket_topology();
  const auto granularity =
      GENERATE(Granularity::cpu, Granularity::core, Granularity::package, Granularity::machine);
  CAPTURE(to_string(granularity));
  auto source =
      std::make_unique<FakeCounterSource>(papi::every_event_on_every_cpu(1, topology.cpus()));
  auto* fake = source.get();
  for (std::size_t i = 0; i < fake->values_.size(); ++i) fake->values_[i] = (i + 1) * 1000003;
  auto collector = make_papi_collector_from_source(
      config_with(granularity), {spec("PAPI_TOT_CYC", "cycles")}, topology, std::move(source));

  // The expected series, worked out from the topology directly.
  std::map<std::map<std::string, std::string>, double> expected;
  for (std::size_t i = 0; i < fake->layout().counters.size(); ++i) {
    const HardwareThread& t = *topology.find(fake->layout().counters[i].cpu);
    std::map<std::string, std::string> labels;
    switch (granularity) {
      case Granularity::cpu:
        labels = {{"cpu", std::to_string(t.cpu)},
                  {"core", std::to_string(t.core)},
                  {"package", std::to_string(t.package)},
                  {"numa_node", std::to_string(t.numa_node)}};
        break;
      case Granularity::core:
        labels = {{"core", std::to_string(t.core)}, {"package", std::to_string(t.package)}};
        break;
      case Granularity::package: labels = {{"package", std::to_string(t.package)}}; break;
      case Granularity::machine: break;
    }
    expected[labels] += static_cast<double>(fake->values_[i]);
  }

  const std::string family = std::string("hwperf_") + to_string(granularity) + "_cycles_total";
  const auto samples = find_samples(scrape(*collector), family);
  REQUIRE(samples.size() == expected.size());
  for (const auto& sample : samples) {
    const auto it = expected.find(sample.labels);
    REQUIRE(it != expected.end());
    CHECK(sample.value == it->second);
  }
}

TEST_CASE("clock events are exported in seconds", "[papi]") {
  const Topology topology = two_socket_topology();
  auto source = std::make_unique<FakeCounterSource>(papi::every_event_on_every_cpu(1, {0, 1}));
  auto* fake = source.get();
  fake->values_ = {1500000000ull, 2000000000000000007ull};  // 1.5 s; ~23 days and 7 ns
  auto collector = make_papi_collector_from_source(
      config_with(Granularity::cpu),
      {spec("perf::CPU-CLOCK", "clock_seconds", events::Unit::nanoseconds)}, topology,
      std::move(source));
  const auto samples = scrape(*collector);
  CHECK(value_of(samples, "hwperf_cpu_clock_seconds_total", {{"cpu", "0"}}) ==
        Approx(static_cast<double>(fake->values_[0]) / 1e9));
  CHECK(value_of(samples, "hwperf_cpu_clock_seconds_total", {{"cpu", "1"}}) ==
        Approx(static_cast<double>(fake->values_[1]) / 1e9));
}

TEST_CASE("an exported counter never decreases, even when a scaled count does", "[papi]") {
  const Topology topology = two_socket_topology();
  auto source = std::make_unique<FakeCounterSource>(papi::every_event_on_every_cpu(1, {0}));
  auto* fake = source.get();
  auto collector = make_papi_collector_from_source(config_with(Granularity::cpu),
                                                   {spec("PAPI_TOT_INS", "instructions")}, topology,
                                                   std::move(source));
  const std::map<std::string, std::string> cpu0 = {{"cpu", "0"}};
  const std::uint64_t first = 5000000, lower = 4999000, higher = 5100000;

  fake->values_ = {first};
  CHECK(value_of(scrape(*collector), "hwperf_cpu_instructions_total", cpu0) == first);
  fake->values_ = {lower};  // multiplex scaling can estimate below the last estimate
  CHECK(value_of(scrape(*collector), "hwperf_cpu_instructions_total", cpu0) == first);
  fake->values_ = {higher};
  CHECK(value_of(scrape(*collector), "hwperf_cpu_instructions_total", cpu0) == higher);
}

TEST_CASE("dropped counters are reported, and the rest keeps counting", "[papi]") {
  const Topology topology = two_socket_topology();
  SourceLayout layout;
  // Event 0 counts on CPUs 0 and 1; event 1 only on CPU 0; event 2 nowhere.
  layout.counters = {{0, 0}, {0, 1}, {1, 0}};
  layout.dropped = {{1, 1, "Event does not exist", "no PMU"},
                    {2, 0, "Permission level does not permit operation", "sysctl"},
                    {2, 1, "Permission level does not permit operation", "sysctl"}};
  layout.event_sets = {{0, 0, "cpu_attach", true, {0, 2}}, {1, 0, "qualifier", false, {1}}};
  auto source = std::make_unique<FakeCounterSource>(layout);
  source->values_ = {10, 20, 30};
  auto collector = make_papi_collector_from_source(
      config_with(Granularity::cpu),
      {spec("perf::CPU-CLOCK", "clock"), spec("PAPI_TOT_INS", "instructions"),
       spec("PAPI_TOT_CYC", "cycles")},
      topology, std::move(source));
  const auto samples = scrape(*collector);

  CHECK(find_samples(samples, "hwperf_cpu_clock_total").size() == 2);
  const auto instructions = find_samples(samples, "hwperf_cpu_instructions_total");
  REQUIRE(instructions.size() == 1);
  CHECK(instructions[0].labels.at("cpu") == "0");
  CHECK(find_samples(samples, "hwperf_cpu_cycles_total").empty());

  // One series per event and reason, whatever the number of CPUs: cpus lists them.
  std::map<std::pair<std::string, std::string>, std::vector<unsigned>> expected;
  for (const auto& drop : layout.dropped) {
    const std::string event = drop.event == 1 ? "PAPI_TOT_INS" : "PAPI_TOT_CYC";
    expected[{event, drop.reason}].push_back(drop.cpu);
  }
  const auto dropped = find_samples(samples, "hwperf_papi_event_dropped");
  REQUIRE(dropped.size() == expected.size());
  for (auto& [key, cpus] : expected) {
    std::sort(cpus.begin(), cpus.end());
    CHECK(
        value_of(samples, "hwperf_papi_event_dropped",
                 {{"event", key.first}, {"reason", key.second}, {"cpus", format_cpu_list(cpus)}}) ==
        static_cast<double>(cpus.size()));
  }
  for (const auto& set : layout.event_sets) {
    const std::map<std::string, std::string> labels = {{"cpu", std::to_string(set.cpu)},
                                                       {"event_set", std::to_string(set.index)}};
    CHECK(value_of(samples, "hwperf_papi_event_set_multiplexed", labels) ==
          (set.multiplexed ? 1.0 : 0.0));
    auto with_binding = labels;
    with_binding["binding"] = set.binding;
    CHECK(value_of(samples, "hwperf_papi_event_set_events", with_binding) ==
          static_cast<double>(set.counters.size()));
  }
}

TEST_CASE("HELP names the PAPI event, the domain and the level", "[papi]") {
  const Topology topology = two_socket_topology();
  auto config = config_with(Granularity::package);
  config.domain = CountingDomain::user;
  auto collector = make_papi_collector_from_source(
      config, {spec("PAPI_L1_DCM", "l1_data_cache_misses")}, topology,
      std::make_unique<FakeCounterSource>(papi::every_event_on_every_cpu(1, {0, 4})));
  std::vector<prometheus::MetricFamily> families;
  collector->collect(families);
  const auto it = std::find_if(families.begin(), families.end(), [](const auto& family) {
    return family.name == "hwperf_package_l1_data_cache_misses_total";
  });
  REQUIRE(it != families.end());
  CHECK(it->type == prometheus::MetricType::Counter);
  CHECK_THAT(it->help, Catch::Contains("Test event PAPI_L1_DCM") &&
                           Catch::Contains("PAPI event PAPI_L1_DCM") &&
                           Catch::Contains("user mode only") && Catch::Contains("package"));
}

TEST_CASE("HELP states the event's own u/k domain, not the configured one", "[papi]") {
  const Topology topology = two_socket_topology();
  const auto [configured, event, domain] =
      GENERATE(table<CountingDomain, std::string, std::string>({
          {CountingDomain::all, "perf::CYCLES:u", "user mode only"},
          {CountingDomain::user, "perf::CYCLES:k=1", "kernel mode only"},
          {CountingDomain::kernel, "perf::CYCLES:u=1:k=1", "user and kernel mode"},
      }));
  auto config = config_with(Granularity::cpu);
  config.domain = configured;
  auto collector = make_papi_collector_from_source(
      config, {spec(event, "cycles"), spec("perf::CPU-CYCLES", "cpu_cycles")}, topology,
      std::make_unique<FakeCounterSource>(papi::every_event_on_every_cpu(2, {0})));
  std::vector<prometheus::MetricFamily> families;
  collector->collect(families);
  auto help_of = [&](const std::string& name) {
    const auto it = std::find_if(families.begin(), families.end(),
                                 [&](const auto& family) { return family.name == name; });
    return it == families.end() ? std::string() : it->help;
  };
  CAPTURE(event);
  CHECK_THAT(help_of("hwperf_cpu_cycles_total"),
             Catch::Contains("PAPI event " + event + ", counted system-wide (every process) in " +
                             domain + " (set by the event's own u/k qualifiers), per CPU"));
  // An event without u/k qualifiers is counted in the configured domain.
  const std::string configured_text = configured == CountingDomain::all    ? "user and kernel mode"
                                      : configured == CountingDomain::user ? "user mode only"
                                                                           : "kernel mode only";
  CHECK_THAT(
      help_of("hwperf_cpu_cpu_cycles_total"),
      Catch::Contains("in " + configured_text + ", per CPU") && !Catch::Contains("qualifiers"));
}

TEST_CASE("a failing source fails the scrape, not the exporter", "[papi]") {
  const Topology topology = two_socket_topology();
  auto source = std::make_unique<FakeCounterSource>(papi::every_event_on_every_cpu(1, {0, 1}));
  auto* fake = source.get();
  fake->values_ = {123, 456};
  CollectorSet set;
  set.add(make_papi_collector_from_source(config_with(Granularity::cpu),
                                          {spec("PAPI_TOT_INS", "instructions")}, topology,
                                          std::move(source)));

  fake->fail_ = true;
  auto samples = parse_exposition(serialize(set.collect(), ExpositionFormat::text_0_0_4));
  CHECK(value_of(samples, "hwperf_scrape_collector_success", {{"collector", "papi"}}) == 0.0);
  CHECK(find_samples(samples, "hwperf_cpu_instructions_total").empty());

  fake->fail_ = false;  // the next scrape is served as if nothing happened
  samples = parse_exposition(serialize(set.collect(), ExpositionFormat::text_0_0_4));
  CHECK(value_of(samples, "hwperf_scrape_collector_success", {{"collector", "papi"}}) == 1.0);
  CHECK(value_of(samples, "hwperf_cpu_instructions_total", {{"cpu", "1"}}) ==
        static_cast<double>(fake->values_[1]));
}

TEST_CASE("names that clash or are invalid are configuration errors", "[papi]") {
  const Topology topology = two_socket_topology();
  CHECK_THROWS_AS(
      make_papi_collector_from_source(
          config_with(Granularity::cpu),
          {spec("PAPI_TOT_INS", "instructions"), spec("perf::INSTRUCTIONS", "instructions")},
          topology, std::make_unique<FakeCounterSource>(papi::every_event_on_every_cpu(2, {0}))),
      ConfigError);
  CHECK_THROWS_AS(make_papi_collector_from_source(
                      config_with(Granularity::cpu), {spec("PAPI_TOT_INS", "bad-name")}, topology,
                      std::make_unique<FakeCounterSource>(papi::every_event_on_every_cpu(1, {0}))),
                  ConfigError);
}

// Issue 39: the per-CPU series are fixed once the collector is built (a rebuilt event set counts
// the same counters), so a scrape writes them from text prepared then, as the RAPL collector
// does: the same bytes as collect()'s families, in both formats.
TEST_CASE("the papi collector writes its series from text prepared at startup, byte for byte",
          "[papi][exposition]") {
  const Topology topology = two_socket_topology();
  auto source =
      std::make_unique<FakeCounterSource>(papi::every_event_on_every_cpu(2, topology.cpus()));
  auto* fake = source.get();
  for (std::size_t i = 0; i < fake->values_.size(); ++i) fake->values_[i] = 1000000007 * (i + 1);
  papi::Maintenance maintenance;
  maintenance.online_cpus = [&] { return std::optional<std::vector<unsigned>>(topology.cpus()); };
  maintenance.period = std::chrono::milliseconds(0);  // no thread: the test reads alone
  const auto granularity = GENERATE(Granularity::cpu, Granularity::core, Granularity::machine);
  CAPTURE(to_string(granularity));
  auto collector = make_papi_collector_from_source(
      config_with(granularity),
      {spec("PAPI_TOT_INS", "instructions"),
       spec("perf::TASK-CLOCK", "task_clock_seconds", events::Unit::nanoseconds)},
      topology, std::move(source), maintenance);
  REQUIRE(capabilities_of(*collector).text != nullptr);
  for (const auto format : {ExpositionFormat::text_0_0_4, ExpositionFormat::openmetrics_1_0_0}) {
    std::vector<prometheus::MetricFamily> families;
    collector->collect(families);
    std::string expected = "before\n";
    append_families(expected, families, format);
    std::string text = "before\n";
    collect_text(*collector, text, format);
    CHECK(text == expected);
    CHECK_THAT(text, Catch::Contains("hwperf_cpu_online{cpu=\"1\"} 1\n"));
  }
}
