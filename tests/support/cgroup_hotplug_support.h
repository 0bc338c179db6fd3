// CPU 1 taken offline and back under a container collector, as its perf and bpf modes' tests
// both run it: a cgroup counted before CPU 1 goes, one found while it is offline, and a child
// spinning on CPU 1 in each once it is back.
#pragma once

#include "tests/catch.hpp"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "collectors/cgroup/cgroup_collector.h"
#include "tests/support/cgroup_live_support.h"
#include "tests/support/support.h"

namespace hwperf::test::cgroup_live {

struct HotplugCount {
  std::string leaf;    // "before" or "during"
  double used = 0;     // the child's CPU time (its rusage), seconds
  double counted = 0;  // its cgroup's hwperf_container_clock_seconds_total over the spin
  double lost = 0;     // hwperf_container_unattributed_clock_seconds_total over it (bpf mode)
};

inline double family_sum(const std::vector<Sample>& samples, const std::string& family,
                         const std::map<std::string, std::string>& labels = {}) {
  double sum = 0;
  for (const auto& sample : find_samples(samples, family, labels)) sum += sample.value;
  return sum;
}

// `collector` counts the leaves below `parent`, `name` under the hierarchy's root, and has
// counted `parent`/before since it started. Takes CPU 1 offline, makes `parent`/during and
// rescans, brings CPU 1 back and rescans; then a child spins 300 ms on CPU 1 only in each leaf:
// without counters there again, nothing would be counted.
inline std::vector<HotplugCount> count_across_hotplug(cgroup::CgroupCollector& collector,
                                                      const TestCgroup& parent,
                                                      const std::string& name) {
  std::unique_ptr<TestCgroup> during;
  {
    Cpu1Offline offline;
    REQUIRE(offline.took_offline());
    during = std::make_unique<TestCgroup>(parent.path() / "during");
    collector.rescan();
    CHECK(value_of(scrape(collector), "hwperf_container_cgroups") == 2);
    offline.bring_back();
    REQUIRE(cpu1_online());
  }
  collector.rescan();
  std::vector<HotplugCount> counts;
  for (const char* leaf : {"before", "during"}) {
    const std::map<std::string, std::string> cgroup = {{"cgroup", name + "/" + leaf}};
    const auto before = scrape(collector);
    Spinner spinner(300, 1);
    spinner.place_in(parent.path() / leaf);
    HotplugCount count;
    count.leaf = leaf;
    count.used = spinner.run();
    const auto after = scrape(collector);
    count.counted = family_sum(after, "hwperf_container_clock_seconds_total", cgroup) -
                    family_sum(before, "hwperf_container_clock_seconds_total", cgroup);
    count.lost = family_sum(after, "hwperf_container_unattributed_clock_seconds_total") -
                 family_sum(before, "hwperf_container_unattributed_clock_seconds_total");
    CHECK(value_of(after, "hwperf_container_read_errors_total") == 0);
    counts.push_back(count);
  }
  return counts;
}

}  // namespace hwperf::test::cgroup_live
