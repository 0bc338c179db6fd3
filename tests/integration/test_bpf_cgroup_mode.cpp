// The container collector in BPF mode (collectors.cgroup.mode, issue 38) on this machine's
// kernel: the same families and labels as perf mode, a busy cgroup's CPU time against cpu.stat
// and perf mode's figure, a cgroup below a counted one counted in it, the engine's descriptors;
// and the mode decided: auto falling back where the BTF is missing (an empty fixture tree in its
// place), bpf refused there at startup and by --check-config's check alike, perf as configured.
// Root runs these; cgroups are made under the v2 hierarchy and removed however a test ends.
#include "tests/catch.hpp"

#include <stdexcept>
#include <string>
#include <vector>

#include "collectors/cgroup/cgroup_collector.h"
#include "collectors/cgroup/cgroup_registration.h"
#include "collectors/papi/papi_presets.h"
#include "tests/support/bpf_live_support.h"
#include "tests/support/cgroup_hotplug_support.h"
#include "tests/support/support.h"
#include "topology/topology.h"

using namespace hwperf;
using namespace hwperf::test::bpf_live;
namespace live = hwperf::test::cgroup_live;

namespace {

std::unique_ptr<cgroup::CgroupCollector> make(const Config& config, const Topology& topology) {
  return cgroup::make_cgroup_collector(config, topology, papi::preset_catalog());
}

double clock_seconds(const std::vector<test::Sample>& samples, const std::string& cgroup) {
  double sum = 0;
  for (const auto& sample :
       test::find_samples(samples, "hwperf_container_clock_seconds_total", {{"cgroup", cgroup}})) {
    sum += sample.value;
  }
  return sum;
}

// What bpf mode gave to no cgroup since its collector started (hwperf_container_unattributed_
// clock_seconds_total over the packages): the CPU time across cgroup switches the kernel did not
// run the program at. A cgroup's count over a window plus this over the same window is at least
// the cgroup's usage (part 1's engine tests allow for it alike).
double unattributed_seconds(const std::vector<test::Sample>& samples) {
  double sum = 0;
  for (const auto& sample :
       test::find_samples(samples, "hwperf_container_unattributed_clock_seconds_total")) {
    sum += sample.value;
  }
  return sum;
}

// `counted` against `reference` within `bound` (0.02: 2 %), `lost` seconds of it given to no
// cgroup over the same window allowed below: the count is at most the reference, and the count
// plus what was lost at least it.
bool brackets(double counted, double reference, double lost, double bound) {
  return counted >= reference * (1 - bound) - lost && counted <= reference * (1 + bound);
}

// The family names and label sets a scrape exports, without values.
std::vector<std::string> shapes(const std::vector<test::Sample>& samples) {
  std::vector<std::string> out;
  for (const auto& sample : samples) {
    // What differs by design: the mode, the descriptors, and bpf mode's series of the cgroups
    // removed before discovery (perf events cannot see them).
    if (sample.name == "hwperf_container_counting_mode" ||
        sample.name == "hwperf_container_open_counters" ||
        sample.name == "hwperf_container_missed_switches_total" ||
        sample.name.rfind("hwperf_container_unattributed_", 0) == 0 ||
        (sample.labels.count("cgroup") != 0 &&
         sample.labels.at("cgroup") == cgroup::kRemovedBeforeDiscovery)) {
      continue;
    }
    std::string shape = sample.name;
    for (const auto& [key, value] : sample.labels) shape += " " + key + "=" + value;
    out.push_back(shape);
  }
  return out;
}

// A cgroup made for the test with one leaf.
struct TestTree {
  TestTree(const char* what, const char* leaf_name)
      : h(v2_hierarchy()),
        name(live::unique_name(what)),
        parent(h.root / name),
        leaf(parent.path() / leaf_name) {}
  live::Hierarchy h;
  std::string name;
  live::TestCgroup parent;
  live::TestCgroup leaf;
  Topology topology = Topology::load(TopologyConfig{});
};

// The same, counted by a collector in each mode.
struct BothModes : TestTree {
  BothModes(const char* what, const char* leaf_name)
      : TestTree(what, leaf_name),
        bpf(make(clock_config(name, CountingMode::bpf), topology)),
        perf(make(clock_config(name, CountingMode::perf), topology)) {}
  std::unique_ptr<cgroup::CgroupCollector> bpf;
  std::unique_ptr<cgroup::CgroupCollector> perf;
};

}  // namespace

TEST_CASE("BPF mode: a busy cgroup's cpu-clock is its cpu.stat usage and perf mode's within 2 %",
          "[live][bpf][cgroup]") {
  BothModes modes("bpfmode", "busy");
  REQUIRE(modes.bpf->unavailable().empty());
  live::Spinner spinner(1500);
  spinner.place_in(modes.leaf.path());
  const double lost_before = unattributed_seconds(test::scrape(*modes.bpf));
  const double used = spinner.run();
  const auto bpf_samples = test::scrape(*modes.bpf);
  const auto perf_samples = test::scrape(*modes.perf);
  const double in_bpf = clock_seconds(bpf_samples, modes.name + "/busy");
  const double in_perf = clock_seconds(perf_samples, modes.name + "/busy");
  const double lost = unattributed_seconds(bpf_samples) - lost_before;
  const double usage = usage_seconds(modes.leaf.path());
  INFO("bpf mode " << in_bpf << " s (" << lost << " s given to no cgroup across "
                   << test::value_of(bpf_samples, "hwperf_container_missed_switches_total", {})
                   << " missed switches), perf mode " << in_perf << " s, cpu.stat " << usage
                   << " s, the child's rusage " << used << " s");
  CHECK(brackets(in_bpf, usage, lost, 0.02));
  CHECK(brackets(in_bpf, in_perf, lost, 0.02));
  CHECK(test::value_of(bpf_samples, "hwperf_container_counting_mode",
                       {{"mode", "bpf"}, {"reason", "configured"}}) == 1);
  CHECK(test::value_of(perf_samples, "hwperf_container_counting_mode",
                       {{"mode", "perf"}, {"reason", "configured"}}) == 1);
  // The same families and labels in both modes: dashboards and rules do not change.
  CHECK(shapes(bpf_samples) == shapes(perf_samples));
  // The engine's descriptors, whatever the number of cgroups: (events + 1) x CPUs + 14.
  CHECK(test::value_of(bpf_samples, "hwperf_container_open_counters", {}) ==
        static_cast<double>(2 * modes.topology.threads().size() + 14));
}

TEST_CASE("BPF mode: a cgroup two levels below a counted one is counted in it, as perf counts it",
          "[live][bpf][cgroup]") {
  // "pod" is counted while a leaf; its descendants come after the rescan that found it.
  BothModes modes("bpfnest", "pod");
  const live::TestCgroup middle(modes.leaf.path() / "mid");
  const live::TestCgroup deep(middle.path() / "leaf");
  live::Spinner spinner(800);
  spinner.place_in(deep.path());
  const double lost_before = unattributed_seconds(test::scrape(*modes.bpf));
  const double used = spinner.run();
  const auto bpf_samples = test::scrape(*modes.bpf);
  const double in_bpf = clock_seconds(bpf_samples, modes.name + "/pod");
  const double in_perf = clock_seconds(test::scrape(*modes.perf), modes.name + "/pod");
  const double lost = unattributed_seconds(bpf_samples) - lost_before;
  const double usage = usage_seconds(deep.path());
  INFO("the leaf two levels down: cpu.stat " << usage << " s (rusage " << used
                                             << " s); counted in its ancestor: bpf mode " << in_bpf
                                             << " s (" << lost << " s given to no cgroup), perf "
                                             << "mode " << in_perf << " s");
  CHECK(brackets(in_bpf, usage, lost, 0.02));
  CHECK(brackets(in_bpf, in_perf, lost, 0.02));
}

TEST_CASE("collectors.cgroup.mode: auto falls back to perf without BTF, bpf is refused there",
          "[bpf][cgroup][config]") {
  const TestTree tree("bpfauto", "c");
  const std::string& name = tree.name;
  const Topology& topology = tree.topology;
  const test::TempDir no_btf;  // a sysfs without kernel/btf/vmlinux

  SECTION("auto: perf events, and why") {
    Config config = clock_config(name, CountingMode::automatic);
    config.get<CgroupCollectorConfig>().bpf_sysfs = no_btf.path().string();
    auto collector = make(config, topology);
    REQUIRE(collector->unavailable().empty());
    const auto samples = test::scrape(*collector);
    CHECK(test::value_of(samples, "hwperf_container_counting_mode",
                         {{"mode", "perf"}, {"reason", "no_btf"}}) == 1);
    CHECK(test::find_samples(samples, "hwperf_container_clock_seconds_total",
                             {{"cgroup", name + "/c"}})
              .size() == topology.packages().size());
  }
  SECTION("auto where BPF loads: bpf") {
    auto collector = make(clock_config(name, CountingMode::automatic), topology);
    CHECK(test::value_of(test::scrape(*collector), "hwperf_container_counting_mode",
                         {{"mode", "bpf"}, {"reason", "bpf_available"}}) == 1);
  }
  SECTION("bpf: a startup error naming the BTF, and --check-config's check says the same") {
    Config config = clock_config(name, CountingMode::bpf);
    config.get<CgroupCollectorConfig>().bpf_sysfs = no_btf.path().string();
    const std::string btf = (no_btf.path() / "kernel/btf/vmlinux").string();
    CHECK_THROWS_WITH(make(config, topology), Catch::Contains("collectors.cgroup.mode: bpf") &&
                                                  Catch::Contains(btf) &&
                                                  Catch::Contains("CONFIG_DEBUG_INFO_BTF"));
    const CollectorServices services{papi::preset_catalog()};
    CHECK_THROWS_WITH(cgroup_collector_entry().check(config, topology, services),
                      Catch::Contains("collectors.cgroup.mode: bpf") && Catch::Contains(btf));
  }
  SECTION("perf: as today") {
    auto collector = make(clock_config(name, CountingMode::perf), topology);
    CHECK(test::value_of(test::scrape(*collector), "hwperf_container_counting_mode",
                         {{"mode", "perf"}, {"reason", "configured"}}) == 1);
  }
}

TEST_CASE("BPF mode: a 1 s job that came and went between two rescans is counted, not dropped",
          "[live][bpf][cgroup]") {
  const TestTree tree("bpfjob", "steady");
  const std::string& name = tree.name;
  const Topology& topology = tree.topology;
  auto collector = make(clock_config(name, CountingMode::bpf), topology);  // rescans in 60 s
  const auto first = test::scrape(*collector);
  const double before = clock_seconds(first, cgroup::kRemovedBeforeDiscovery);
  const double lost_before = unattributed_seconds(first);
  double used = 0;
  {
    const live::TestCgroup job(tree.parent.path() / "job");
    live::Spinner spinner(1000);
    spinner.place_in(job.path());
    used = spinner.run();
  }  // removed here, never named by a rescan
  const auto samples = test::scrape(*collector);
  const double counted = clock_seconds(samples, cgroup::kRemovedBeforeDiscovery) - before;
  const double lost = unattributed_seconds(samples) - lost_before;
  INFO("the job used " << used << " s (getrusage); counted as removed before discovery: " << counted
                       << " s (the node's other cgroups removed meanwhile too), " << lost
                       << " s given to no cgroup");
  CHECK(brackets(counted, used, lost, 0.05));
  // Discovery names what it found as before, and the job never appears under a name.
  CHECK(test::find_samples(samples, "hwperf_container_clock_seconds_total",
                           {{"cgroup", name + "/steady"}})
            .size() == topology.packages().size());
  CHECK(test::find_samples(samples, "hwperf_container_clock_seconds_total",
                           {{"cgroup", name + "/job"}})
            .empty());
  CHECK(test::value_of(samples, "hwperf_container_cgroups", {}) == 1);
}

TEST_CASE("BPF mode: a CPU taken offline and brought back counts its cgroups again",
          "[live][bpf][cgroup][hotplug]") {
  if (const auto problem = test::cpu1_hotplug_problem(); !problem.empty()) FAIL(problem);
  REQUIRE(test::cpu1_online());
  TestTree tree("bpfhotplug", "before");  // counted before CPU 1 goes
  REQUIRE(tree.topology.find(1) != nullptr);
  test::CapturedStderr log;
  auto collector = make(clock_config(tree.name, CountingMode::bpf), tree.topology);
  REQUIRE(collector->unavailable().empty());
  collector->rescan();
  for (const auto& count : live::count_across_hotplug(*collector, tree.parent, tree.name)) {
    INFO(count.leaf << ": the child used " << count.used << " s of CPU 1; counted " << count.counted
                    << " s, " << count.lost << " s given to no cgroup");
    // The bounds of the perf-mode test of the same (test_cgroup_live.cpp).
    CHECK(count.counted >= count.used * 0.9 - count.lost);
    CHECK(count.counted <= count.used * 1.25);
  }
  const std::string text = log.text();
  INFO(text);
  CHECK(test::occurrences(text, "CPU 1 is back online") == 1);
  CHECK(test::occurrences(text, "stay paused") == 0);
}
