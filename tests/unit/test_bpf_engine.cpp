// The BPF engine's pure parts, without loading anything: what it says is missing, the options it
// refuses, per-CPU map entries decoded as the kernel lays them out, a group's reading, when a
// removed cgroup's entry is deleted, and tracked cgroups' sums.
#include "tests/catch.hpp"

#include <linux/capability.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "collectors/perf/bpf/bpf_support.h"
#include "collectors/perf/bpf/cgroup_engine.h"
#include "collectors/perf/bpf/map_layout.h"
#include "collectors/perf/bpf/map_values.h"
#include "collectors/perf/bpf/subtree_totals.h"
#include "tests/support/support.h"

using namespace hwperf;
using namespace hwperf::perf::bpf;

namespace {

BpfFacts all_there() {
  BpfFacts facts;
  facts.btf_path = "/sys/kernel/btf/vmlinux";
  facts.btf_present = true;
  facts.cap_bpf = facts.cap_perfmon = true;
  facts.perf_event_on_cgroup_v2 = true;
  return facts;
}

// One entry's bytes as bpf_map_lookup_batch returns a per-CPU hash map's: one value per possible
// CPU, `stride` bytes apart; the sums of event e on CPU slot s are (id, e, s)-dependent numbers.
std::vector<unsigned char> entry_bytes(const ValueShape& shape, std::uint64_t id,
                                       std::size_t flagged_slot) {
  std::vector<unsigned char> bytes(shape.entry_bytes());
  for (std::size_t slot = 0; slot < shape.cpu_slots; ++slot) {
    hwperf_bpf_counts value{};
    value.flags = slot == flagged_slot ? HWPERF_BPF_REMOVED : 0;
    for (std::size_t e = 0; e < shape.events; ++e) {
      value.sum[e] = {id * 1000 + e * 10 + slot, 100 + slot, 50 + slot};
    }
    std::memcpy(bytes.data() + slot * shape.stride(), &value, shape.value_size());
  }
  return bytes;
}

EngineOptions valid_options() {
  EngineOptions options;
  options.groups = {{{"cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK}}};
  options.cpus = {0};
  options.perf_event_on_cgroup_v2 = true;
  return options;
}

}  // namespace

TEST_CASE("BPF support: each missing requirement is named with its remedy", "[bpf_unit]") {
  CHECK(missing_for_bpf(all_there()).empty());
  BpfFacts admin = all_there();
  admin.cap_bpf = admin.cap_perfmon = false;
  admin.cap_sys_admin = true;
  CHECK(missing_for_bpf(admin).empty());

  BpfFacts facts = all_there();
  std::string expected;
  SECTION("no capability") {
    facts.cap_bpf = facts.cap_perfmon = false;
    expected = "CAP_BPF and CAP_PERFMON are not in the effective set";
  }
  SECTION("CAP_BPF only") {
    facts.cap_perfmon = false;
    expected = "CAP_PERFMON are not";
  }
  SECTION("no BTF") {
    facts.btf_present = false;
    facts.btf_path = "/host/sys/kernel/btf/vmlinux";
    expected = "/host/sys/kernel/btf/vmlinux does not exist";
  }
  SECTION("perf_event in cgroup v1") {
    facts.perf_event_on_cgroup_v2 = false;
    expected = "perf_event cgroup controller on cgroup v2";
  }
  const auto missing = missing_for_bpf(facts);
  REQUIRE(missing.size() == 1);
  CHECK_THAT(bpf_unavailable_message(missing),
             Catch::StartsWith("BPF counting cannot start here: ") && Catch::Contains(expected));
}

TEST_CASE("BPF support: a thread without capabilities is told which it lacks", "[bpf_unit]") {
  // Capabilities are per thread: this one drops its effective set, the test's others keep theirs.
  std::vector<std::string> missing;
  std::thread([&missing] {
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2]{};
    if (::syscall(SYS_capget, &header, data) != 0) return;
    data[0].effective = data[1].effective = 0;
    if (::syscall(SYS_capset, &header, data) != 0) return;
    missing = missing_for_bpf(probe_bpf_facts("/sys", true));
  }).join();
  INFO(bpf_unavailable_message(missing));
  REQUIRE_FALSE(missing.empty());
  CHECK_THAT(missing.front(),
             Catch::Contains("CAP_BPF and CAP_PERFMON") && Catch::Contains("CAP_SYS_ADMIN"));
}

TEST_CASE("BPF engine: without BTF it does not start, and says so", "[bpf_unit]") {
  const test::TempDir sysfs;  // no kernel/btf/vmlinux in it
  EngineOptions options = valid_options();
  options.sysfs = sysfs.path().string();
  const auto facts = probe_bpf_facts(options.sysfs, true);
  CHECK_FALSE(facts.btf_present);
  CHECK_THROWS_WITH(CgroupEngine::open(options),
                    Catch::Contains("BPF counting cannot start here") &&
                        Catch::Contains(options.sysfs + "/kernel/btf/vmlinux does not exist"));
}

TEST_CASE("BPF engine: options it cannot honour are refused before anything loads", "[bpf_unit]") {
  EngineOptions options = valid_options();
  std::string expected;
  SECTION("no event") {
    options.groups.clear();
    expected = "0 events";
  }
  SECTION("an empty group") {
    options.groups.push_back({});
    expected = "group is empty";
  }
  SECTION("more events than the program holds") {
    options.groups.assign(kMaxEvents + 1, options.groups.front());
    expected = std::to_string(kMaxEvents + 1) + " events";
  }
  SECTION("a CPU twice") {
    options.cpus = {0, 0};
    expected = "listed twice";
  }
  SECTION("a CPU that cannot exist") {
    options.cpus = {1u << 20};
    expected = "is not a possible CPU";
  }
  SECTION("no room for a cgroup") {
    options.max_cgroups = 0;
    expected = "max_cgroups";
  }
  CHECK_THROWS_AS(CgroupEngine::open(options), std::invalid_argument);
  CHECK_THROWS_WITH(CgroupEngine::open(options), Catch::Contains(expected));
}

TEST_CASE("BPF map entries: per-CPU copies decoded for the CPUs counted", "[bpf_unit]") {
  // 3 events; 4 possible CPUs of which CPUs 1 and 3 are counted.
  const ValueShape shape{3, 4, {1, 3}};
  CHECK(shape.value_size() == 8 + 3 * 24);
  CHECK(shape.stride() == 80);
  const std::vector<std::uint64_t> keys = {7, 9};
  // Entry 7 flagged by a CPU that is not counted (slot 2); entry 9 by none.
  auto bytes = entry_bytes(shape, 7, 2);
  const auto second = entry_bytes(shape, 9, 99);
  bytes.insert(bytes.end(), second.begin(), second.end());
  std::vector<CgroupCounts> out;
  decode_counts(keys.data(), bytes.data(), 2, shape, out);
  REQUIRE(out.size() == 2);
  CHECK(out[0].id == 7);
  CHECK(out[0].removed);
  CHECK_FALSE(out[1].removed);
  REQUIRE(out[1].values.size() == 6);
  // values[event * cpus + index]: event 2 on CPU 3 (index 1) of entry 9.
  CHECK(out[1].values[2 * 2 + 1].value == 9 * 1000 + 2 * 10 + 3);
  CHECK(out[1].values[2 * 2 + 1].enabled_ns == 103);
  CHECK(out[1].values[2 * 2 + 1].running_ns == 53);
  CHECK(out[0].values[0].value == 7 * 1000 + 0 + 1);
}

TEST_CASE("BPF map entries: a group's reading on a CPU has its leader's times", "[bpf_unit]") {
  CgroupCounts counts;
  // 3 events on 2 CPUs: a lone event, then a group of two.
  counts.values = {{1, 10, 10}, {2, 20, 20}, {3, 30, 15}, {4, 40, 20}, {5, 31, 16}, {6, 41, 21}};
  const perf::GroupReading reading = group_reading(counts, 1, 2, 2, 1);
  CHECK(reading.enabled_ns == 40);
  CHECK(reading.running_ns == 20);
  CHECK(reading.values == std::vector<std::uint64_t>{4, 6});
  // Scaled as a kernel group is: by the leader's running share.
  const perf::GroupDelta delta = perf::delta_between(perf::GroupReading{}, reading);
  CHECK(delta.counts == std::vector<std::uint64_t>{8, 12});
}

TEST_CASE("BPF removal grace: an entry is deleted at the second read that sees it removed",
          "[bpf_unit]") {
  RemovalGrace grace;
  CHECK(grace.due({7}).empty());
  CHECK(grace.waiting() == 1);
  CHECK(grace.due({7, 8}) == std::vector<std::uint64_t>{7});
  CHECK(grace.due({8}) == std::vector<std::uint64_t>{8});
  CHECK(grace.due({}).empty());
  CHECK(grace.waiting() == 0);
  // One that a read no longer returns (forgotten meanwhile) is not waited for.
  CHECK(grace.due({9}).empty());
  CHECK(grace.due({}).empty());
  CHECK(grace.due({9}).empty());
}

TEST_CASE("BPF subtree sums: a tracked cgroup gets its descendants' counts, removed ones kept",
          "[bpf_unit]") {
  // One event on one CPU: a reading per cgroup. 10 is tracked; 11 and 12 are below it, 20 beside.
  const auto counts = [](std::uint64_t id, std::uint64_t value) {
    return CgroupCounts{id, false, {{value, value * 2, value}}};
  };
  const Lineages lineages = {
      {10, {1, 10}}, {11, {1, 10, 11}}, {12, {1, 10, 11, 12}}, {20, {1, 20}}};
  SubtreeTotals totals(1);
  totals.track(10);
  totals.track(12);
  totals.track(13);  // no entry, no lineage: a sum of its own
  std::vector<CgroupCounts> own = {counts(10, 1), counts(11, 20), counts(12, 300),
                                   counts(20, 4000)};
  const auto sum_of = [&](std::uint64_t id, const std::vector<CgroupCounts>& entries) {
    for (const auto& sum : totals.sums(entries, lineages)) {
      if (sum.id == id) return sum.values.at(0);
    }
    FAIL("no sum for " << id);
    return perf::Reading{};
  };
  CHECK(totals.sums(own, lineages).size() == 3);
  CHECK(sum_of(10, own).value == 321);
  CHECK(sum_of(10, own).enabled_ns == 642);
  CHECK(sum_of(12, own).value == 300);
  CHECK(sum_of(13, own).value == 0);
  // 11 is removed: its entry's last counts move into its tracked ancestors' sums.
  totals.retire(own[1], lineages);
  own.erase(own.begin() + 1);
  CHECK(sum_of(10, own).value == 321);
  // An entry whose lineage is not known yet counts for itself.
  own.push_back(counts(13, 50000));
  CHECK(sum_of(13, own).value == 50000);
  CHECK(sum_of(10, own).value == 321);
  totals.forget(10);
  CHECK_FALSE(totals.tracks(10));
  CHECK(totals.sums(own, lineages).size() == 2);
}

TEST_CASE("BPF subtree sums: a cgroup deeper than the recorded ancestry counts for itself",
          "[bpf_unit]") {
  std::vector<std::uint64_t> cut;
  for (std::uint64_t level = 1; level <= HWPERF_BPF_MAX_LEVELS; ++level) cut.push_back(level);
  const Lineages lineages = {{99, cut}};
  SubtreeTotals totals(1);
  totals.track(2);
  totals.track(99);
  const std::vector<CgroupCounts> own = {{99, false, {{7, 7, 7}}}};
  for (const auto& sum : totals.sums(own, lineages)) CHECK(sum.values.at(0).value == 7);
}
