// Real RAPL hardware only (hidden tag; run as root on a RAPL machine):
//   hwperf_tests "[rapl_hardware]"
// Every interface this host allows measures the same busy interval; they must agree, and the
// power must lie between idle and the ceiling.
#include "tests/catch.hpp"

#include <atomic>
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "collectors/rapl/msr_source.h"
#include "collectors/rapl/perf_source.h"
#include "collectors/rapl/powercap_source.h"
#include "collectors/rapl/rapl_engine.h"
#include "topology/topology.h"

using namespace hwperf;
using namespace hwperf::rapl;

TEST_CASE("every available RAPL interface measures the same package energy",
          "[.hardware][rapl_hardware]") {
  const PathsConfig paths;  // the host's /sys, /proc, /dev
  const Topology topology = Topology::load(TopologyConfig{}, paths);
  std::vector<ProbeResult> probes;
  probes.push_back(open_perf_source(paths.sysfs, paths.procfs, topology, DomainSet::all()));
  // With the CPU, as the exporter opens it: on AMD the one-core `core` zone is left out.
  probes.push_back(
      open_powercap_source(paths.sysfs, topology, DomainSet::all(), topology.cpu_identity()));
  probes.push_back(open_msr_source(paths, topology, DomainSet::all()));

  std::map<std::string, std::unique_ptr<RaplEngine>> engines;
  std::map<std::string, PowerCeilings> ceilings;
  for (auto& probe : probes) {
    if (!probe.source) {
      WARN(probe.message);
      continue;
    }
    const auto c =
        choose_power_ceilings(0, probe.source->package_power_hints(), topology.packages());
    std::vector<double> watts;
    for (const auto& counter : probe.source->counters())
      watts.push_back(counter_ceiling(counter, c));
    ceilings[to_string(probe.interface)] = c;
    engines[to_string(probe.interface)] =
        std::make_unique<RaplEngine>(std::move(probe.source), watts);
  }
  REQUIRE_FALSE(engines.empty());

  // Two seconds with every CPU busy.
  std::atomic<bool> stop{false};
  std::vector<std::thread> burners;
  for (unsigned i = 0; i < std::thread::hardware_concurrency(); ++i) {
    burners.emplace_back([&stop] {
      volatile std::uint64_t x = 0;
      while (!stop.load(std::memory_order_relaxed)) x = x + 1;
    });
  }
  auto package_totals = [&engines] {
    std::map<std::string, std::map<unsigned, double>> totals;
    for (auto& [name, engine] : engines) {
      for (const auto& s : engine->snapshot()) {
        if (s.key.domain == Domain::package && s.key.package) {
          totals[name][*s.key.package] += s.tally.energy.joules();
        }
      }
    }
    return totals;
  };
  const auto start = std::chrono::steady_clock::now();
  const auto before = package_totals();
  std::this_thread::sleep_for(std::chrono::seconds(2));
  auto package_joules = package_totals();
  for (auto& [name, per_package] : package_joules) {
    for (auto& [package, joules] : per_package) joules -= before.at(name).at(package);
  }
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  stop = true;
  for (auto& t : burners) t.join();

  for (const auto& [name, per_package] : package_joules) {
    for (const auto& [package, joules] : per_package) {
      CAPTURE(name, package, joules, elapsed.count());
      const double watts = joules / elapsed.count();
      CHECK(watts > 0.5);  // a busy package draws more than half a watt
      CHECK(watts < ceilings[name].package_watts[package]);
    }
  }
  // The interfaces read the same hardware counter: within a few percent of each other (they
  // were read moments apart, not at once).
  if (package_joules.size() >= 2) {
    const auto& [first_name, first] = *package_joules.begin();
    for (const auto& [name, per_package] : package_joules) {
      for (const auto& [package, joules] : per_package) {
        CAPTURE(first_name, name, package);
        CHECK(joules == Approx(first.at(package)).epsilon(0.05));
      }
    }
  } else {
    WARN("only one RAPL interface available here: no cross-check");
  }
}
