// A scrape of the real PAPI collector reads every CPU's event sets from the scraping thread
// itself: PAPI_read takes a set by handle from any thread (papi_source.cpp), so the owner
// threads PAPI ties sets to sleep through scrapes. A design that handed each read to its owner
// would wake one thread per CPU on every scrape: 512 threads per scrape on a 512-CPU machine.
#include <dirent.h>

#include "tests/catch.hpp"
#include <fstream>
#include <map>
#include <string>

#include "tests/support/papi_live_support.h"

using namespace hwperf;
using namespace hwperf::test::papi_live;
using hwperf::test::scrape;

namespace {

// Voluntary context switches (each one a sleep the thread was woken from) of every thread of
// this process, by thread id.
std::map<std::string, long> voluntary_switches() {
  std::map<std::string, long> switches;
  DIR* tasks = opendir("/proc/self/task");
  REQUIRE(tasks != nullptr);
  while (const dirent* entry = readdir(tasks)) {
    const std::string tid = entry->d_name;
    if (tid == "." || tid == "..") continue;
    std::ifstream status("/proc/self/task/" + tid + "/status");
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind("voluntary_ctxt_switches:", 0) == 0) {
        switches[tid] = std::stol(line.substr(line.find(':') + 1));
      }
    }
  }
  closedir(tasks);
  return switches;
}

}  // namespace

TEST_CASE("a scrape reads every CPU's PAPI event sets without waking a thread per CPU",
          "[papi][live]") {
  require_system_wide_perf();
  const Topology topology = live_topology();
  auto collector = make_papi_collector(
      config_for({"perf::CPU-CLOCK", "perf::PAGE-FAULTS", "perf::CONTEXT-SWITCHES"}, "all"),
      topology);
  const std::string scraping_thread = std::to_string(gettid());
  scrape(*collector);  // the first read of each set, apart from the ones measured

  constexpr int kScrapes = 200;
  const auto before = voluntary_switches();
  for (int i = 0; i < kScrapes; ++i) scrape(*collector);
  const auto after = voluntary_switches();

  // Every thread of the process but the scraping one: the owners of the event sets (one per
  // CPU here, where sets are bound by qualifier), the maintenance thread (woken once a second
  // to watch hotplug) and whatever else runs. None may be woken on most scrapes.
  std::size_t threads_seen = 0;
  for (const auto& [tid, count] : after) {
    if (tid == scraping_thread) continue;
    const auto was = before.find(tid);
    if (was == before.end()) continue;  // started meanwhile, not by a scrape
    ++threads_seen;
    CAPTURE(tid, count - was->second, kScrapes);
    CHECK(count - was->second < kScrapes / 10);
  }
  // The owner threads exist: the check above looked at them.
  CHECK(threads_seen >= topology.cpus().size());
}
