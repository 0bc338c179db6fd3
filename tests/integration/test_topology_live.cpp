// The topology of this machine itself, as hwloc reads it from this process's /sys.
#include "tests/catch.hpp"

#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "common/cpu_list.h"
#include "tests/support/support.h"
#include "topology/topology.h"

using namespace hwperf;

namespace {

std::vector<unsigned> online_cpus() {
  std::ifstream in("/sys/devices/system/cpu/online");
  std::string text;
  if (in && std::getline(in, text) && !text.empty()) return parse_cpu_list(text);
  // No sysfs (unusual container): glibc answers from the same kernel view.
  std::vector<unsigned> all(std::thread::hardware_concurrency());
  for (unsigned i = 0; i < all.size(); ++i) all[i] = i;
  return all;
}

}  // namespace

TEST_CASE("the live system: every online CPU, each under its caches", "[topology]") {
  const Topology topology = Topology::load(TopologyConfig{});
  const std::vector<unsigned> online = online_cpus();
  REQUIRE_FALSE(online.empty());
  CHECK(topology.cpus() == online);
  for (unsigned cpu : online) {
    CAPTURE(cpu);
    CHECK(topology.find(cpu) != nullptr);
  }
  for (const Cache& cache : topology.caches()) {
    CHECK(cache.level >= 1);
    for (unsigned cpu : cache.cpus) CHECK(topology.find(cpu) != nullptr);
  }
  CHECK(topology.description().find("(system)") != std::string::npos);
  CHECK_FALSE(hwloc_library_version().empty());
}

TEST_CASE("a --path.sysfs without CPUs in it leaves hwloc on this process's own /sys",
          "[topology]") {
  test::TempDir fixture;
  fixture.write("sys/class/powercap/intel-rapl/enabled", "1\n");
  PathsConfig paths;
  paths.sysfs = (fixture.path() / "sys").string();
  const Topology here = Topology::load(TopologyConfig{});
  const Topology with_fixture = Topology::load(TopologyConfig{}, paths);
  CHECK(with_fixture.cpus() == here.cpus());
  CHECK(with_fixture.description() == here.description());
}
