// The uncore collector on Arm servers (issue 37): memory traffic per package from NVIDIA Grace's
// SCF PMUs, Arm CMN meshes and DMC-620 memory controllers, from sysfs fixture trees written from
// the kernel drivers' own strings (tests/support/uncore_fixtures.h), counted through a fake
// backend. Package ids come from the topology and need not be dense: a two-socket Grace numbers its
// packages 36 and 2364.
#include "tests/catch.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "collectors/uncore/uncore_collector.h"
#include "collectors/uncore/uncore_plan.h"
#include "tests/support/support.h"
#include "tests/support/uncore_fixtures.h"
#include "topology/topology.h"

using namespace hwperf;
using namespace hwperf::test;
using namespace hwperf::test::uncore_fixture;

namespace {

// `packages` sockets of `cores` single-threaded cores, CPUs numbered socket by socket, one NUMA
// node per socket, with the package ids Linux reports (physical_package_id).
Topology sockets(const std::vector<unsigned>& packages, unsigned cores) {
  std::vector<HardwareThread> threads;
  for (unsigned socket = 0; socket < packages.size(); ++socket) {
    for (unsigned core = 0; core < cores; ++core) {
      threads.push_back(
          {socket * cores + core, core, packages[socket], static_cast<int>(socket), 0});
    }
  }
  return Topology(std::move(threads), {}, "test sockets");
}

// A two-socket Grace (72 Neoverse V2 cores each): RRZE-HPC/likwid#585 found its sockets
// reported as 36 and 2364.
constexpr unsigned kGraceCores = 72;
const std::vector<unsigned> kGracePackages = {36, 2364};

struct Built {
  std::shared_ptr<FakeState> state = std::make_shared<FakeState>();
  std::vector<std::string> report;
  std::unique_ptr<Collector> collector;
};

Built build(const TempDir& root, const Topology& topology, double peak = 0) {
  Built built;
  auto plan = uncore::plan_uncore((root.path() / "sys").string(), topology);
  built.report = uncore::describe_plan(plan);
  built.collector =
      uncore::make_uncore_collector(std::move(plan), std::make_unique<FakeBackend>(built.state),
                                    (root.path() / "proc").string(), {}, peak);
  return built;
}

std::map<std::string, std::string> package_label(unsigned package) {
  return {{"package", std::to_string(package)}};
}

const std::string& report_line(const std::vector<std::string>& report, const std::string& source) {
  for (const auto& line : report) {
    if (line.rfind(source + ": ", 0) == 0) return line;
  }
  FAIL("no --check-config line for " + source);
  return report.front();
}

}  // namespace

TEST_CASE(
    "a two-socket Grace: nvidia_scf_pmu reads and writes per package, under package ids 36 "
    "and 2364",
    "[uncore]") {
  const Topology topology = sockets(kGracePackages, kGraceCores);
  TempDir root;
  // The kernel names the PMUs after the NUMA node (0, 1); each counts on a CPU of its socket.
  write_grace_scf(root, 0, 70, "0", "0-71");
  write_grace_scf(root, 1, 71, "72", "72-143");
  Built built = build(root, topology, 500e9);
  auto& state = *built.state;

  // Two events per socket, on the cpumask's CPU, with the PMU's type and the event's id in
  // config:0-32; nothing of the PCIe PMUs.
  REQUIRE(state.opened.size() == 4);
  std::map<std::pair<unsigned, bool>, std::uint64_t> expected;  // (package, read) -> bytes
  for (std::size_t handle = 0; handle < state.opened.size(); ++handle) {
    const Opened& open = state.opened[handle];
    CAPTURE(open.event.name);
    CHECK(open.event.name.rfind("nvidia_scf_pmu_", 0) == 0);
    const bool node1 = open.event.name.rfind("nvidia_scf_pmu_1/", 0) == 0;
    CHECK(open.cpu == (node1 ? kGraceCores : 0u));
    CHECK(open.event.type == (node1 ? 71u : 70u));
    const bool read = open.event.config == kScfCmemReadData;
    CHECK((read || open.event.config == kScfCmemWriteTotalBytes));
    state.counts[handle] = 1000003 * (handle + 7);
    const unsigned package = topology.find(open.cpu)->package;
    expected[{package, read}] += state.counts[handle] * (read ? kScfBytesPerReadBeat : 1);
  }
  const auto samples = scrape(*built.collector);
  for (unsigned package : kGracePackages) {
    CAPTURE(package);
    CHECK(value_of(samples, "hwperf_memory_read_bytes_total", package_label(package)) ==
          static_cast<double>(expected[{package, true}]));
    CHECK(value_of(samples, "hwperf_memory_write_bytes_total", package_label(package)) ==
          static_cast<double>(expected[{package, false}]));
    CHECK(value_of(samples, "hwperf_memory_peak_bytes_per_second", package_label(package)) ==
          500e9);
  }
  CHECK(find_samples(samples, "hwperf_memory_read_bytes_total").size() == 2);
  CHECK(find_samples(samples, "hwperf_memory_bytes_total").empty());
  CHECK(value_of(samples, "hwperf_uncore_source_available",
                 {{"source", "memory_read"}, {"pmu", "nvidia_scf_pmu"}, {"reason", "ok"}}) == 1);
  CHECK(value_of(samples, "hwperf_uncore_source_available",
                 {{"source", "memory_total"}, {"pmu", "nvidia_scf_pmu"}, {"reason", "absent"}}) ==
        0);
  CHECK_THAT(report_line(built.report, "memory_read"),
             Catch::Contains("nvidia_scf_pmu, 2 box(es)") &&
                 Catch::Contains("package 36 on cpu 0; package 2364 on cpu 72"));
}

TEST_CASE(
    "a two-socket Altra: each socket's arm_cmn mesh gives its package's memory traffic, the "
    "DMC-620s beside it are not counted twice",
    "[uncore]") {
  constexpr unsigned kCores = 80;
  const std::vector<unsigned> packages = {0, 1};
  const Topology topology = sockets(packages, kCores);
  TempDir root;
  write_arm_cmn(root, 0, 50, "0", true);
  write_arm_cmn(root, 1, 51, std::to_string(kCores), true);
  write_arm_cmn(root, 2, 52, "0", false);  // a mesh without home nodes: no memory traffic
  for (const char* address : {"10008c000", "100090000", "100094000", "100098000"}) {
    write_arm_dmc620(root, address, 60, "0");
  }
  Built built = build(root, topology);
  auto& state = *built.state;

  REQUIRE(state.opened.size() == 2);  // one hnf_mc_reqs per mesh with home nodes
  std::map<unsigned, std::uint64_t> expected;
  for (std::size_t handle = 0; handle < state.opened.size(); ++handle) {
    const Opened& open = state.opened[handle];
    CAPTURE(open.event.name);
    CHECK(open.event.name.rfind("arm_cmn_", 0) == 0);
    CHECK(open.event.config == (kCmnTypeHnf | kCmnEventMcReqs << kCmnEventIdShift));
    CHECK(open.event.config1 == 0);
    state.counts[handle] = 424243 * (handle + 2);
    expected[topology.find(open.cpu)->package] += state.counts[handle] * kBytesPerCacheLine;
  }
  CHECK(expected.size() == 2);  // the two meshes counted on their own sockets' CPUs
  const auto samples = scrape(*built.collector);
  for (unsigned package : packages) {
    CHECK(value_of(samples, "hwperf_memory_bytes_total", package_label(package)) ==
          static_cast<double>(expected[package]));
  }
  CHECK(find_samples(samples, "hwperf_memory_read_bytes_total").empty());
  CHECK(value_of(samples, "hwperf_uncore_source_available",
                 {{"source", "memory_total"}, {"pmu", "arm_cmn"}, {"reason", "ok"}}) == 1);
  CHECK(value_of(samples, "hwperf_uncore_source_available",
                 {{"source", "memory_read"}, {"pmu", "arm_cmn"}, {"reason", "absent"}}) == 0);
  CHECK_THAT(report_line(built.report, "memory_total"),
             Catch::Contains("arm_cmn, 2 box(es)") &&
                 Catch::Contains("package 0 on cpu 0; package 1 on cpu 80"));
  CHECK_THAT(report_line(built.report, "memory_read"),
             Catch::Contains("arm_cmn counts hnf_mc_reqs: reads and writes together"));
}

TEST_CASE("a one-socket Altra with DMC-620 PMUs only: every channel is the package's", "[uncore]") {
  // The kernel without a cpumask file for them (before it gained one), and with one.
  const bool with_cpumask = GENERATE(false, true);
  CAPTURE(with_cpumask);
  constexpr unsigned kCores = 128;
  // A package id as Linux might report it, not assumed 0.
  const Topology topology = sockets({3}, kCores);
  const std::vector<std::string> channels = {"10008c000", "100090000", "100094000", "100098000",
                                             "10009c000", "1000a0000", "1000a4000", "1000a8000"};
  TempDir root;
  for (std::size_t i = 0; i < channels.size(); ++i) {
    // The interrupt's CPU, not the first one.
    write_arm_dmc620(root, channels[i], 60 + static_cast<unsigned>(i), with_cpumask ? "5" : "");
  }
  Built built = build(root, topology);
  auto& state = *built.state;

  REQUIRE(state.opened.size() == channels.size());
  std::uint64_t commands = 0;
  for (std::size_t handle = 0; handle < state.opened.size(); ++handle) {
    const Opened& open = state.opened[handle];
    CAPTURE(open.event.name);
    CHECK(open.event.name == "arm_dmc620_" + channels[handle] + "/clkdiv2_rdwr/");
    CHECK(open.event.config == 0);
    CHECK(open.event.config1 == 0);
    CHECK(open.event.config2 == (kDmcEventRdwr << kDmcEventShift | 1ull << kDmcClkdiv2Bit));
    CHECK(topology.find(open.cpu)->package == 3);
    state.counts[handle] = 99991 * (handle + 1);
    commands += state.counts[handle];
  }
  const auto samples = scrape(*built.collector);
  CHECK(value_of(samples, "hwperf_memory_bytes_total", package_label(3)) ==
        static_cast<double>(commands * kBytesPerCacheLine));
  CHECK(value_of(samples, "hwperf_uncore_source_available",
                 {{"source", "memory_total"}, {"pmu", "arm_dmc620"}, {"reason", "ok"}}) == 1);
}

TEST_CASE(
    "DMC-620 PMUs on two sockets without a CMN are not counted: their cpumask says no "
    "package",
    "[uncore]") {
  const Topology topology = sockets({0, 1}, 4);
  TempDir root;
  write_arm_dmc620(root, "10008c000", 60, "0");
  write_arm_dmc620(root, "40008c000", 61, "0");  // on socket 1, its interrupt taken by CPU 0
  Built built = build(root, topology);
  CHECK(built.state->opened.empty());
  const auto samples = scrape(*built.collector);
  CHECK(find_samples(samples, "hwperf_memory_bytes_total").empty());
  CHECK(value_of(samples, "hwperf_uncore_source_available",
                 {{"source", "memory_total"}, {"pmu", "arm_dmc620"}, {"reason", "unusable"}}) == 0);
  CHECK_THAT(report_line(built.report, "memory_total"),
             Catch::Contains("not counted (unusable)") &&
                 Catch::Contains("CPU taking their interrupt") && Catch::Contains("2 packages"));
}

// A memory source whose traffic another source of the same PMU family counts (memory_total beside
// Grace's reads and writes, reads and writes beside a CMN's total) is no fault of the machine:
// said once as information, while a source the machine lacks is warned about.
TEST_CASE("a memory source its PMU counts under another source is logged as info and not warned",
          "[uncore]") {
  const bool grace = GENERATE(true, false);
  CAPTURE(grace);
  const Topology topology = sockets(kGracePackages, kGraceCores);
  TempDir root;
  if (grace) {
    write_grace_scf(root, 0, 70, "0", "0-71");
    write_grace_scf(root, 1, 71, "72", "72-143");
  } else {
    write_arm_cmn(root, 0, 50, "0", true);
    write_arm_cmn(root, 1, 51, "72", true);
  }
  std::string log;
  {
    CapturedStderr captured;
    build(root, topology);
    log = captured.text();
  }
  const std::vector<std::string> others =
      grace ? std::vector<std::string>{"memory_total"}
            : std::vector<std::string>{"memory_read", "memory_write"};
  for (const std::string& source : others) {
    CAPTURE(source, log);
    CHECK(occurrences(log, "level=info msg=\"uncore: " + source + " not counted apart") == 1);
    CHECK(occurrences(log, "not counting " + source) == 0);
  }
  // The msr PMU Arm lacks is still warned about.
  CHECK(occurrences(log, "level=warn msg=\"uncore: not counting msr_tsc (absent)") == 1);
}
