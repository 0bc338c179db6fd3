// The uncore collector: PMU discovery from sysfs fixture trees (Sapphire Rapids IMC, Zen 4 UMC,
// the msr PMU), the events it opens (CPU and config bits), bytes per package from scripted
// counts through a fake backend, missing hardware as a state, and the live msr PMU's tsc.
#include "tests/catch.hpp"

#include <cerrno>
#include <cstdint>
#include <map>
#include <memory>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "collectors/uncore/uncore_collector.h"
#include "collectors/uncore/uncore_plan.h"
#include "common/text.h"
#include "tests/support/support.h"
#include "tests/support/uncore_fixtures.h"
#include "topology/topology.h"

using namespace hwperf;
using namespace hwperf::test;
using namespace hwperf::test::uncore_fixture;

namespace {

// The config word perf_event_open gets for "event=E,umask=U" under format event:config:0-7 and
// a umask whose low 8 bits are config:8-15 (both SPR's umask_ext4 and AMD's rdwrmask start there).
constexpr std::uint64_t config_of(std::uint64_t event, std::uint64_t umask) {
  return event | (umask << 8);
}

// Bytes per CAS as the kernel states them: .scale in .unit (MiB).
double imc_bytes_per_count() { return std::stod(kImcMiBPerCount) * 1024.0 * 1024.0; }

}  // namespace

TEST_CASE("bytes per count come from the kernel's .scale and .unit, exactly or not at all",
          "[uncore]") {
  struct Row {
    const char* scale;
    const char* unit;
    std::uint64_t bytes;  // 0: refused
  };
  const Row row = GENERATE(Row{"6.103515625e-5", "MiB", 64}, Row{"6.103515625e-5\n", "MiB\n", 64},
                           Row{"64", "B", 64}, Row{"0.0625", "KiB", 64},
                           Row{"1e-5", "MiB", 0},  // 10.48576 bytes: not whole
                           Row{"6.103515625e-5", "Joules", 0}, Row{"nan", "MiB", 0},
                           Row{"-1", "B", 0}, Row{"", "MiB", 0});
  const auto bytes = uncore::bytes_per_count(row.scale, row.unit);
  if (row.bytes == 0) {
    CHECK_FALSE(bytes.has_value());
  } else {
    REQUIRE(bytes.has_value());
    CHECK(*bytes == row.bytes);
  }
}

TEST_CASE(
    "a two-socket Sapphire Rapids: IMC boxes opened on each package's cpumask CPU, bytes "
    "summed per package",
    "[uncore]") {
  constexpr unsigned kBoxes = 8;
  constexpr unsigned kCoresPerPackage = 56;
  TempDir root;
  write_spr_imc(root, kBoxes, "0," + std::to_string(kCoresPerPackage));
  write_msr(root, true);
  const Topology topology =
      test::synthetic_topology("pack:2 core:" + std::to_string(kCoresPerPackage) + " pu:1");
  REQUIRE(topology.find(kCoresPerPackage)->package == 1);

  auto plan = uncore::plan_uncore((root.path() / "sys").string(), topology);
  const auto report = uncore::describe_plan(plan);
  auto state = std::make_shared<FakeState>();
  auto collector = uncore::make_uncore_collector(
      std::move(plan), std::make_unique<FakeBackend>(state), (root.path() / "proc").string());

  // Per package: 8 boxes x 2 events, each on the package's cpumask CPU with the box's own type
  // and the config bits of the format files; no free-running box.
  std::map<unsigned, unsigned> imc_opens;  // cpu -> count
  std::set<std::uint32_t> types;
  for (const Opened& open : state->opened) {
    if (open.event.name.rfind("uncore_imc_", 0) != 0) continue;
    CHECK(open.event.name.find("free_running") == std::string::npos);
    ++imc_opens[open.cpu];
    types.insert(open.event.type);
    const bool read = open.event.name.find("cas_count_read") != std::string::npos;
    CHECK(open.event.config == (read ? config_of(kSprCasReadEvent, kSprCasReadUmask)
                                     : config_of(kSprCasWriteEvent, kSprCasWriteUmask)));
    CHECK(open.event.config1 == 0);
    CHECK_FALSE(open.event.exclude_user);
    CHECK_FALSE(open.event.exclude_kernel);
  }
  CHECK(imc_opens == std::map<unsigned, unsigned>{{0, 2 * kBoxes}, {kCoresPerPackage, 2 * kBoxes}});
  CHECK(types.size() == kBoxes);

  // Scripted CAS counts, different per box and package, in two scrapes.
  std::map<std::pair<unsigned, bool>, std::uint64_t> cas;  // (package, read) -> CAS count
  for (std::uint64_t round = 1; round <= 2; ++round) {
    cas.clear();
    for (std::size_t handle = 0; handle < state->opened.size(); ++handle) {
      const Opened& open = state->opened[handle];
      if (open.event.name.rfind("uncore_imc_", 0) != 0) continue;
      const std::uint64_t count = round * 1000003 * (handle + 1);
      state->counts[handle] = count;
      const unsigned package = open.cpu == 0 ? 0 : 1;
      cas[{package, open.event.name.find("cas_count_read") != std::string::npos}] += count;
    }
    const auto samples = scrape(*collector);
    for (unsigned package : {0u, 1u}) {
      const std::map<std::string, std::string> labels = {{"package", std::to_string(package)}};
      CHECK(value_of(samples, "hwperf_memory_read_bytes_total", labels) ==
            static_cast<double>(cas[{package, true}]) * imc_bytes_per_count());
      CHECK(value_of(samples, "hwperf_memory_write_bytes_total", labels) ==
            static_cast<double>(cas[{package, false}]) * imc_bytes_per_count());
    }
    CHECK(value_of(samples, "hwperf_uncore_source_available",
                   {{"source", "memory_read"}, {"pmu", "uncore_imc"}, {"reason", "ok"}}) == 1);
  }
  // --check-config names the PMU and the CPU each package is counted on.
  REQUIRE(report.size() == uncore::kQuantityCount);
  CHECK(report[0].find("uncore_imc, 8 box(es)") != std::string::npos);
  CHECK(report[0].find("package 0 on cpu 0; package 1 on cpu 56") != std::string::npos);
}

TEST_CASE("a two-socket Zen 4: amd_umc boxes of each socket give bytes per package", "[uncore]") {
  constexpr unsigned kUmcPerSocket = 12;
  TempDir root;
  // Package 1 begins at CPU 32 in "pack:2 core:16 pu:2".
  write_zen4_umc(root, 0, kUmcPerSocket, "0");
  write_zen4_umc(root, kUmcPerSocket, kUmcPerSocket, "32");
  const Topology topology = test::synthetic_topology("pack:2 core:16 pu:2");
  REQUIRE(topology.find(32)->package == 1);

  auto state = std::make_shared<FakeState>();
  auto collector = uncore::make_uncore_collector(
      uncore::plan_uncore((root.path() / "sys").string(), topology),
      std::make_unique<FakeBackend>(state), (root.path() / "proc").string());
  REQUIRE(state->opened.size() == 2 * 2 * kUmcPerSocket);
  std::map<std::pair<unsigned, bool>, std::uint64_t> cas;
  for (std::size_t handle = 0; handle < state->opened.size(); ++handle) {
    const Opened& open = state->opened[handle];
    const unsigned box =
        static_cast<unsigned>(std::stoul(open.event.name.substr(std::string("amd_umc_").size())));
    const unsigned package = box < kUmcPerSocket ? 0 : 1;
    CHECK(open.cpu == (package == 0 ? 0u : 32u));
    CHECK(open.event.type == kUmcType + box);
    const bool read = open.event.config == config_of(kUmcCasEvent, kUmcReadMask);
    CHECK((read || open.event.config == config_of(kUmcCasEvent, kUmcWriteMask)));
    state->counts[handle] = 7777 * (handle + 3);
    cas[{package, read}] += state->counts[handle];
  }
  const auto samples = scrape(*collector);
  for (unsigned package : {0u, 1u}) {
    const std::map<std::string, std::string> labels = {{"package", std::to_string(package)}};
    CHECK(value_of(samples, "hwperf_memory_read_bytes_total", labels) ==
          static_cast<double>(cas[{package, true}] * kBytesPerCas));
    CHECK(value_of(samples, "hwperf_memory_write_bytes_total", labels) ==
          static_cast<double>(cas[{package, false}] * kBytesPerCas));
  }
}

TEST_CASE("a configured peak bandwidth is exported for each package whose memory is counted",
          "[uncore]") {
  TempDir root;
  write_zen4_umc(root, 0, 2, "0");
  write_zen4_umc(root, 2, 2, "32");
  const Topology topology = test::synthetic_topology("pack:2 core:16 pu:2");
  const double peak = GENERATE(0.0, 460.8e9, 1e6);
  CAPTURE(peak);
  auto collector =
      uncore::make_uncore_collector(uncore::plan_uncore((root.path() / "sys").string(), topology),
                                    std::make_unique<FakeBackend>(std::make_shared<FakeState>()),
                                    (root.path() / "proc").string(), {}, peak);
  const auto samples = scrape(*collector);
  const auto peaks = find_samples(samples, "hwperf_memory_peak_bytes_per_second");
  if (peak == 0) {
    CHECK(peaks.empty());
  } else {
    REQUIRE(peaks.size() == 2);
    for (unsigned package : {0u, 1u}) {
      CHECK(value_of(samples, "hwperf_memory_peak_bytes_per_second",
                     {{"package", std::to_string(package)}}) == peak);
    }
  }
  // No memory PMU: no peak either, since no share of it can be computed.
  TempDir bare;
  write_msr(bare, true);
  auto without_memory =
      uncore::make_uncore_collector(uncore::plan_uncore((bare.path() / "sys").string(), topology),
                                    std::make_unique<FakeBackend>(std::make_shared<FakeState>()),
                                    (bare.path() / "proc").string(), {}, 460.8e9);
  CHECK(find_samples(scrape(*without_memory), "hwperf_memory_peak_bytes_per_second").empty());
}

TEST_CASE("a Tiger Lake client: its free-running IMC counters, used when no other IMC is there",
          "[uncore]") {
  const Topology topology = test::synthetic_topology("pack:1 core:4 pu:2");
  TempDir root;
  write_tgl_imc(root, 2);
  auto state = std::make_shared<FakeState>();
  auto collector = uncore::make_uncore_collector(
      uncore::plan_uncore((root.path() / "sys").string(), topology),
      std::make_unique<FakeBackend>(state), (root.path() / "proc").string());
  REQUIRE(state->opened.size() == 2 * 2);
  std::uint64_t read_cas = 0, write_cas = 0;
  for (std::size_t handle = 0; handle < state->opened.size(); ++handle) {
    const Opened& open = state->opened[handle];
    CHECK(open.cpu == 0);
    const bool read = open.event.name.find("data_read") != std::string::npos;
    CHECK(open.event.config == config_of(0xff, read ? 0x20 : 0x30));
    state->counts[handle] = 123457 * (handle + 1);
    (read ? read_cas : write_cas) += state->counts[handle];
  }
  const auto samples = scrape(*collector);
  CHECK(value_of(samples, "hwperf_memory_read_bytes_total", {{"package", "0"}}) ==
        static_cast<double>(read_cas) * imc_bytes_per_count());
  CHECK(value_of(samples, "hwperf_memory_write_bytes_total", {{"package", "0"}}) ==
        static_cast<double>(write_cas) * imc_bytes_per_count());
  CHECK(
      value_of(samples, "hwperf_uncore_source_available",
               {{"source", "memory_read"}, {"pmu", "uncore_imc_free_running"}, {"reason", "ok"}}) ==
      1);
}

TEST_CASE("missing PMUs and refused opens are states, exported and reported", "[uncore]") {
  const Topology topology = test::synthetic_topology("pack:2 core:2 pu:1");
  TempDir root;
  root.write("proc/sys/kernel/perf_event_paranoid", "2\n");

  SECTION("no uncore or msr PMU: every source absent, no counter family") {
    root.write(pmu_path("software") + "type", "1\n");
    auto plan = uncore::plan_uncore((root.path() / "sys").string(), topology);
    const auto report = uncore::describe_plan(plan);
    auto state = std::make_shared<FakeState>();
    auto collector = uncore::make_uncore_collector(
        std::move(plan), std::make_unique<FakeBackend>(state), (root.path() / "proc").string());
    CHECK(state->opened.empty());
    const auto samples = scrape(*collector);
    for (const char* source :
         {"memory_read", "memory_write", "msr_aperf", "msr_mperf", "msr_tsc"}) {
      CHECK(value_of(samples, "hwperf_uncore_source_available",
                     {{"source", source}, {"reason", "absent"}}) == 0);
    }
    CHECK(find_samples(samples, "hwperf_memory_read_bytes_total").empty());
    CHECK(find_samples(samples, "hwperf_msr_tsc_cycles_total").empty());
    REQUIRE(report.size() == uncore::kQuantityCount);
    CHECK(report[0].find("not counted (absent)") != std::string::npos);
  }
  SECTION("an msr PMU with tsc only (a VM): aperf and mperf absent, tsc per CPU") {
    write_msr(root, false);
    auto state = std::make_shared<FakeState>();
    auto collector = uncore::make_uncore_collector(
        uncore::plan_uncore((root.path() / "sys").string(), topology),
        std::make_unique<FakeBackend>(state), (root.path() / "proc").string());
    REQUIRE(state->opened.size() == topology.cpus().size());
    for (std::size_t i = 0; i < state->opened.size(); ++i) state->counts[i] = 1000 + i;
    const auto samples = scrape(*collector);
    for (std::size_t i = 0; i < state->opened.size(); ++i) {
      CHECK(value_of(samples, "hwperf_msr_tsc_cycles_total",
                     {{"cpu", std::to_string(state->opened[i].cpu)}}) ==
            static_cast<double>(1000 + i));
    }
    CHECK(value_of(samples, "hwperf_uncore_source_available",
                   {{"source", "msr_aperf"}, {"pmu", "msr"}, {"reason", "absent"}}) == 0);
    CHECK(value_of(samples, "hwperf_uncore_source_available",
                   {{"source", "msr_tsc"}, {"pmu", "msr"}, {"reason", "ok"}}) == 1);
  }
  SECTION("perf_event_open refused: permission_denied, with the paranoid level and remedy") {
    write_spr_imc(root, 2, "0,2");
    auto plan = uncore::plan_uncore((root.path() / "sys").string(), topology);
    auto state = std::make_shared<FakeState>();
    state->open_error = EACCES;
    auto collector = uncore::make_uncore_collector(
        std::move(plan), std::make_unique<FakeBackend>(state), (root.path() / "proc").string());
    const auto samples = scrape(*collector);
    CHECK(value_of(samples, "hwperf_uncore_source_available",
                   {{"source", "memory_write"}, {"reason", "permission_denied"}}) == 0);
    CHECK(find_samples(samples, "hwperf_memory_write_bytes_total").empty());
  }
}

TEST_CASE("C-state residency per core and per package from the cstate PMUs' cpumask CPUs",
          "[uncore]") {
  // 2 packages x 2 cores x 2 threads: CPUs 0-3 in package 0, 4-7 in package 1.
  const Topology topology = test::synthetic_topology("pack:2 core:2 pu:2");
  TempDir root;
  write_cstate(root, "cstate_core", 30, "0,2,4,6", kCoreCstates);
  write_cstate(root, "cstate_pkg", 31, "0,4", kPackageCstates);
  auto state = std::make_shared<FakeState>();
  auto collector = uncore::make_uncore_collector(
      uncore::plan_uncore((root.path() / "sys").string(), topology),
      std::make_unique<FakeBackend>(state), (root.path() / "proc").string());
  REQUIRE(state->opened.size() == 4 * std::size(kCoreCstates) + 2 * std::size(kPackageCstates));

  // Expected series from what was opened: per core (its first thread's core id and package) or
  // per package, with the state named by the event.
  std::map<std::map<std::string, std::string>, std::uint64_t> core_expected, package_expected;
  for (std::size_t handle = 0; handle < state->opened.size(); ++handle) {
    const Opened& open = state->opened[handle];
    const HardwareThread* thread = topology.find(open.cpu);
    REQUIRE(thread != nullptr);
    const bool per_core = open.event.name.rfind("cstate_core/", 0) == 0;
    CHECK(open.event.type == (per_core ? 30u : 31u));
    const std::string event = open.event.name.substr(open.event.name.find('/') + 1);
    const std::string name = event.substr(0, event.find("-residency"));
    bool known = false;
    for (const CstateEvent& e :
         per_core
             ? std::vector<CstateEvent>(std::begin(kCoreCstates), std::end(kCoreCstates))
             : std::vector<CstateEvent>(std::begin(kPackageCstates), std::end(kPackageCstates))) {
      if (name == e.state) {
        CHECK(open.event.config == e.code);
        known = true;
      }
    }
    CHECK(known);
    state->counts[handle] = 5000 + 17 * handle;
    if (per_core) {
      CHECK((open.cpu % 2) == 0);  // the cpumask's CPU: the core's first thread
      core_expected[{{"core", std::to_string(thread->core)},
                     {"package", std::to_string(thread->package)},
                     {"state", name}}] += state->counts[handle];
    } else {
      CHECK((open.cpu == 0 || open.cpu == 4));
      package_expected[{{"package", std::to_string(thread->package)}, {"state", name}}] +=
          state->counts[handle];
    }
  }
  const auto samples = scrape(*collector);
  CHECK(find_samples(samples, "hwperf_cstate_core_residency_cycles_total").size() ==
        core_expected.size());
  for (const auto& [labels, cycles] : core_expected) {
    CHECK(value_of(samples, "hwperf_cstate_core_residency_cycles_total", labels) ==
          static_cast<double>(cycles));
  }
  for (const auto& [labels, cycles] : package_expected) {
    CHECK(value_of(samples, "hwperf_cstate_package_residency_cycles_total", labels) ==
          static_cast<double>(cycles));
  }
  CHECK(value_of(samples, "hwperf_uncore_source_available",
                 {{"source", "cstate_pkg"}, {"pmu", "cstate_pkg"}, {"reason", "ok"}}) == 1);
}
