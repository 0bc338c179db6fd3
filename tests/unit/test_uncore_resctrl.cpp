// resctrl memory bandwidth monitoring through the uncore collector, on fixture trees laid out as
// Documentation/arch/x86/resctrl.rst describes a mounted resctrl: info/, mon_data/mon_L3_NN/
// mbm_total_bytes and mbm_local_bytes for the default group, a control group and a monitoring
// group; L3 domains mapped to packages by each L3's cache id (cpuN/cache/index3/id).
#include "tests/catch.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "collectors/uncore/resctrl.h"
#include "collectors/uncore/uncore_collector.h"
#include "collectors/uncore/uncore_plan.h"
#include "tests/support/support.h"
#include "tests/support/rapl_fixtures.h"
#include "tests/support/uncore_fixtures.h"
#include "topology/topology.h"

using namespace hwperf;
using namespace hwperf::test;
using hwperf::test::rapl_fixture::overwrite_in_place;
using hwperf::test::rapl_fixture::padded_uj;

namespace {

Topology two_l3_topology() {
  // CPUs 0-1 in package 0, 2-3 in package 1, one L3 per package.
  return test::synthetic_topology("pack:2 l3:1 core:2 pu:1");
}

constexpr std::size_t kWidth = 15;  // fixture values are rewritten in place at a fixed width
const std::string kResctrl = "sys/fs/resctrl/";

std::unique_ptr<Collector> collector_on(const TempDir& root, const Topology& topology) {
  const std::string sysfs = (root.path() / "sys").string();
  auto state = std::make_shared<uncore_fixture::FakeState>();
  return uncore::make_uncore_collector(
      uncore::plan_uncore(sysfs, topology), std::make_unique<uncore_fixture::FakeBackend>(state),
      (root.path() / "proc").string(),
      uncore::open_resctrl(sysfs, uncore::l3_packages(sysfs, topology)));
}

}  // namespace

TEST_CASE("resctrl bytes per package and group, read again after the files change in place",
          "[uncore]") {
  const Topology topology = two_l3_topology();
  TempDir root;
  // Cache ids crossed on purpose: package 0's L3 is domain 01, package 1's is domain 00.
  root.write("sys/devices/system/cpu/cpu0/cache/index3/id", "1\n");
  root.write("sys/devices/system/cpu/cpu2/cache/index3/id", "0\n");
  root.write(kResctrl + "info/L3_MON/mon_features",
             "llc_occupancy\nmbm_total_bytes\nmbm_local_bytes\n");
  const std::map<std::string, std::string> group_dirs = {{"/", kResctrl},
                                                         {"batch", kResctrl + "batch/"}};
  const std::string monitor_dir = kResctrl + "batch/mon_groups/job1/";
  // (dir, domain, local) -> value, written and later rewritten.
  std::map<std::string, std::uint64_t> values;
  auto set = [&](const std::string& file, std::uint64_t value, bool first) {
    values[file] = value;
    if (first) {
      root.write(file, padded_uj(value, kWidth));
    } else {
      overwrite_in_place(root.path() / file, value);
    }
  };
  auto write_all = [&](std::uint64_t round, bool first) {
    std::uint64_t seed = 1000;
    for (const std::string& dir : {kResctrl, kResctrl + "batch/", monitor_dir}) {
      for (const char* domain : {"mon_L3_00", "mon_L3_01"}) {
        for (const char* file : {"mbm_total_bytes", "mbm_local_bytes"}) {
          seed = seed * 7 + 13;
          set(dir + "mon_data/" + domain + "/" + file, round * seed, first);
        }
      }
    }
  };
  write_all(1, true);
  auto collector = collector_on(root, topology);
  for (std::uint64_t round = 1; round <= 2; ++round) {
    if (round > 1) write_all(round, false);
    const auto samples = scrape(*collector);
    for (const auto& [group, dir] : group_dirs) {
      for (unsigned package : {0u, 1u}) {
        const std::string domain = package == 0 ? "mon_L3_01" : "mon_L3_00";
        const std::map<std::string, std::string> labels = {{"group", group},
                                                           {"package", std::to_string(package)}};
        CHECK(value_of(samples, "hwperf_resctrl_memory_bytes_total", labels) ==
              static_cast<double>(values[dir + "mon_data/" + domain + "/mbm_total_bytes"]));
        CHECK(value_of(samples, "hwperf_resctrl_local_memory_bytes_total", labels) ==
              static_cast<double>(values[dir + "mon_data/" + domain + "/mbm_local_bytes"]));
      }
    }
    CHECK(value_of(samples, "hwperf_resctrl_monitor_group_memory_bytes_total",
                   {{"group", "batch"}, {"monitor_group", "job1"}, {"package", "1"}}) ==
          static_cast<double>(values[monitor_dir + "mon_data/mon_L3_00/mbm_total_bytes"]));
    CHECK(value_of(samples, "hwperf_uncore_source_available",
                   {{"source", "resctrl"}, {"reason", "ok"}}) == 1);
  }
}

TEST_CASE("resctrl not mounted: an exported state whose message says how to mount it", "[uncore]") {
  const Topology topology = two_l3_topology();
  TempDir root;
  root.write("sys/fs/resctrl/.keep", "");  // sysfs's empty mount point
  const std::string sysfs = (root.path() / "sys").string();
  const auto source = uncore::open_resctrl(sysfs, uncore::l3_packages(sysfs, topology));
  CHECK(source.reason == "not_mounted");
  CHECK(source.detail.find("mount -t resctrl resctrl /sys/fs/resctrl") != std::string::npos);
  CHECK(source.counters.empty());
  auto collector = collector_on(root, topology);
  const auto samples = scrape(*collector);
  CHECK(value_of(samples, "hwperf_uncore_source_available",
                 {{"source", "resctrl"}, {"reason", "not_mounted"}}) == 0);
  CHECK(find_samples(samples, "hwperf_resctrl_memory_bytes_total").empty());
}
