// The BPF engine as the counting layer's backend, without loading anything: a unit's reading
// taken from an engine reading's subtree sums, shaped as a kernel group's, and how many engine
// reads a scrape of many units makes.
#include "tests/catch.hpp"

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "collectors/cgroup/cgroup_config.h"
#include "collectors/perf/bpf/bpf_support.h"
#include "collectors/perf/bpf/engine_backend.h"
#include "collectors/perf/bpf/removed_cgroups.h"
#include "collectors/registry.h"
#include "tests/support/support.h"
#include "topology/topology.h"

using namespace hwperf;
using namespace hwperf::perf::bpf;

namespace {

// A cgroup's counts for `events` events on `cpus` CPUs: event e on CPU c counted 1000 * id +
// 10 * e + c, enabled 100 + c and running 50 + e + c.
CgroupCounts counts_of(std::uint64_t id, std::size_t events, std::size_t cpus) {
  CgroupCounts counts;
  counts.id = id;
  for (std::size_t e = 0; e < events; ++e) {
    for (std::size_t c = 0; c < cpus; ++c) {
      counts.values.push_back({1000 * id + 10 * e + c, 100 + c, 50 + e + c});
    }
  }
  return counts;
}

}  // namespace

TEST_CASE("BPF backend: a unit reads its group on its CPU from its cgroup's subtree sum",
          "[bpf_unit]") {
  EngineReading reading;
  reading.own = {counts_of(9, 3, 2)};  // own counts are not what a unit reads
  reading.subtree = {counts_of(7, 3, 2), counts_of(8, 3, 2)};
  // Events 1 and 2 are one group of two on the second CPU: the leader's times, both counts.
  const auto group = subtree_group_reading(reading, 8, 1, 2, 2, 1);
  REQUIRE(group.has_value());
  CHECK(group->enabled_ns == 101);
  CHECK(group->running_ns == 52);  // the leader's (event 1 on CPU 1)
  CHECK(group->values == std::vector<std::uint64_t>{8011, 8021});
  // A lone event is a group of one.
  const auto lone = subtree_group_reading(reading, 7, 0, 1, 2, 0);
  REQUIRE(lone.has_value());
  CHECK(lone->values == std::vector<std::uint64_t>{7000});
  // Only tracked cgroups' sums are read: an own entry is not a unit's, nor an unknown id.
  CHECK_FALSE(subtree_group_reading(reading, 9, 0, 1, 2, 0).has_value());
  CHECK_FALSE(subtree_group_reading(reading, 1, 0, 1, 2, 0).has_value());
}

TEST_CASE("BPF backend: a scrape of many units reads the engine once", "[bpf_unit]") {
  ReadingGenerations generations;
  std::size_t engine_reads = 0;
  // What a unit's read() does: a fresh reading when it has had the current one.
  const auto unit_read = [&](std::uint64_t& had) {
    if (generations.needs_fresh(had)) {
      ++engine_reads;
      generations.made();
    }
    had = generations.current();
  };
  std::vector<std::uint64_t> units(256 * 2, generations.opened());  // 256 cgroups on 2 CPUs
  for (int scrape = 1; scrape <= 3; ++scrape) {
    for (auto& had : units) unit_read(had);
    CHECK(engine_reads == static_cast<std::size_t>(scrape));
  }
  // A unit opened between scrapes never takes a reading made before its cgroup was tracked: read
  // first, it makes a fresh one, which the others then share.
  std::uint64_t fresh = generations.opened();
  unit_read(fresh);
  CHECK(engine_reads == 4);
  for (auto& had : units) unit_read(had);
  CHECK(engine_reads == 4);
  // Read after the others, it takes theirs.
  std::uint64_t late = generations.opened();
  for (auto& had : units) unit_read(had);
  unit_read(late);
  CHECK(engine_reads == 5);
}

TEST_CASE("BPF support: a kernel before 5.13 has no cgroup-switches event", "[bpf_unit]") {
  CHECK(kernel_has_cgroup_switches("6.1.0-18-amd64"));
  CHECK(kernel_has_cgroup_switches("5.13.0"));
  CHECK_FALSE(kernel_has_cgroup_switches("5.10.0-28-amd64"));
  CHECK_FALSE(kernel_has_cgroup_switches("4.19.0"));
  CHECK(kernel_has_cgroup_switches(""));  // unknown: not held against it
  BpfFacts facts;
  facts.btf_present = true;
  facts.cap_sys_admin = true;
  facts.perf_event_on_cgroup_v2 = true;
  facts.kernel_release = "5.10.0-28-amd64";
  const auto missing = missing_for_bpf(facts);
  REQUIRE(missing.size() == 1);
  CHECK_THAT(missing[0], Catch::Contains("5.13") && Catch::Contains("5.10.0-28-amd64"));
}

TEST_CASE("BPF removed cgroups: one removed before it was counted is summed under its scopes once",
          "[bpf_unit]") {
  RemovedCgroups removed(3 * 2);
  removed.scope(1);  // the hierarchy's root, say
  // 1 -> 2 -> 5 (removed, never counted), 1 -> 3 (counted) -> 6 (removed), 1 -> 4 (alive).
  CgroupCounts gone = counts_of(5, 3, 2);
  gone.removed = true;
  CgroupCounts below_counted = counts_of(6, 3, 2);
  below_counted.removed = true;
  CgroupCounts alive = counts_of(4, 3, 2);
  const std::unordered_map<std::uint64_t, std::vector<std::uint64_t>> lineages = {
      {5, {1, 2, 5}}, {6, {1, 3, 6}}, {4, {1, 4}}};
  CgroupCounts unplaced = counts_of(7, 3, 2);  // its lineage not known: placed nowhere
  unplaced.removed = true;
  const auto counted = [](std::uint64_t id) { return id == 3; };
  removed.gather({gone, below_counted, alive, unplaced}, lineages, counted);
  REQUIRE(removed.sum(1) != nullptr);
  CHECK(removed.sum(1)->at(2 * 2 + 1).value == 5021);  // event 2 on CPU 1, only the gone one's
  CHECK(removed.sum(1)->at(0).enabled_ns == 100);
  CHECK(removed.sum(2) == nullptr);  // not a scope
  // Returned again by the next read (RemovalGrace), with what its last switch added: only that.
  gone.values[0].value += 7;
  removed.gather({gone, below_counted, alive}, lineages, counted);
  CHECK(removed.sum(1)->at(0).value == 5000 + 7);
  CHECK(removed.sum(1)->at(2 * 2 + 1).value == 5021);
  // Deleted, then an entry with the same id made anew (ids are not reused on a live kernel, but
  // the sum must not go back if one were): counted from its zero.
  removed.gather({}, lineages, counted);
  removed.gather({gone}, lineages, counted);
  CHECK(removed.sum(1)->at(0).value == 2 * 5007);
  removed.unscope(1);
  CHECK(removed.sum(1) == nullptr);
}

TEST_CASE(
    "BPF backend: what the engine gave to no cgroup in the counts' shape, scaled, only growing",
    "[bpf_unit]") {
  EngineReading reading;
  reading.missed_switches = 5;
  // [event * cpus + cpu], 2 events on 2 CPUs: counted whole, multiplexed half the time, never run.
  reading.unattributed = {{1000, 50, 50}, {1000, 100, 50}, {0, 100, 0}, {7, 0, 0}};
  UnattributedTotals totals;
  totals.add(reading);
  CHECK(totals.totals().missed_switches == 5);
  CHECK(totals.totals().counts == std::vector<std::uint64_t>{1000, 2000, 0, 7});
  // Then each counted whole over the next 100 ns: 10 more each. The second one's lifetime share
  // is now 150 of 200 ns, which applied to its lifetime count (1010) would give 1346, less than
  // the 2000 exported before: a counter that went back.
  reading.missed_switches = 6;
  reading.unattributed = {{1010, 150, 150}, {1010, 200, 150}, {10, 200, 100}, {17, 100, 100}};
  totals.add(reading);
  CHECK(totals.totals().missed_switches == 6);
  CHECK(totals.totals().counts == std::vector<std::uint64_t>{1010, 2010, 10, 17});
}

TEST_CASE("the container collector's open-file need in bpf mode is the engine's, not per cgroup",
          "[bpf_unit][cgroup]") {
  const Topology topology = test::synthetic_topology("pack:2 core:64 pu:2");
  const unsigned long cpus = topology.threads().size();
  const test::TempDir no_btf;  // auto finds no BTF there, and counts with perf events
  const auto need = [&](CountingMode mode) -> unsigned long {
    Config config;
    auto& cgroup = config.get<CgroupCollectorConfig>();
    cgroup.enabled = true;
    cgroup.max_cgroups = 256;
    cgroup.mode = mode;
    cgroup.bpf_sysfs = no_btf.path().string();
    for (const auto& one : collector_file_needs(config, topology)) {
      if (one.what.rfind("cgroup", 0) == 0) return one.count;
    }
    FAIL("no need of the container collector");
    return 0;
  };
  const unsigned long perf = need(CountingMode::perf);
  const unsigned long events = perf / (256 * cpus);
  REQUIRE(events > 0);
  CHECK(perf == 256 * events * cpus);
  CHECK(need(CountingMode::bpf) == (events + 1) * cpus + kEngineBpfDescriptors);
  CHECK(need(CountingMode::automatic) == perf);
}
