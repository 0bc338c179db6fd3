// Events beyond the counters of a PAPI event set are counted through the perf backend, scaled per
// read interval (issue 18, item 3). Software events never run out of counters, so the source is
// told that each set holds one event (OpenRequest::counters_per_set), as a PMU with one counter
// would.
#include "tests/catch.hpp"

#include <chrono>
#include <thread>

#include "collectors/papi/papi_library.h"
#include "collectors/papi/papi_source.h"
#include "tests/support/papi_live_support.h"

using namespace hwperf;
using namespace hwperf::test::papi_live;

TEST_CASE("events beyond a set's counters count through the perf backend beside PAPI's set",
          "[papi][live]") {
  require_system_wide_perf();
  const Topology topology = live_topology();
  papi::OpenRequest request;
  request.events = {"perf::PAGE-FAULTS", "perf::CPU-CLOCK", "perf::CONTEXT-SWITCHES"};
  request.cpus = topology.cpus();
  request.attach = PapiAttachMode::qualifier;
  request.counters_per_set = 1;
  papi::init_library(PathsConfig{}.procfs);
  auto source = papi::open_papi_source(request);
  const auto& layout = source->layout();
  REQUIRE(layout.dropped.empty());
  // Per CPU: a PAPI set with the first event, a perf set with the other two.
  REQUIRE(layout.event_sets.size() == 2 * request.cpus.size());
  std::size_t perf_sets = 0;
  for (const auto& set : layout.event_sets) {
    if (set.binding != "perf") {
      CHECK(set.counters.size() == 1);
      continue;
    }
    ++perf_sets;
    CHECK(set.multiplexed);
    REQUIRE(set.counters.size() == 2);
    CHECK(request.events[layout.counters[set.counters[0]].event] == "perf::CPU-CLOCK");
  }
  CHECK(perf_sets == request.cpus.size());

  std::vector<std::int64_t> before(layout.counters.size()), after(layout.counters.size());
  std::vector<std::string> failures(layout.event_sets.size());
  source->read(before, failures);
  const auto start = Clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  source->read(after, failures);
  const double wall_ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
  for (const auto& failure : failures) CHECK(failure.empty());
  for (std::size_t i = 0; i < layout.counters.size(); ++i) {
    CHECK(after[i] >= before[i]);
    if (request.events[layout.counters[i].event] != "perf::CPU-CLOCK") continue;
    // A CPU's clock advances by wall time, busy or idle.
    const auto advanced = static_cast<double>(after[i] - before[i]);
    INFO("CPU " << layout.counters[i].cpu << ": CPU-CLOCK advanced " << advanced << " ns in "
                << wall_ns << " ns");
    CHECK(advanced == Approx(wall_ns).epsilon(0.2));
  }
  // A reset zeroes a perf set's totals, and it counts on from there.
  for (std::size_t s = 0; s < layout.event_sets.size(); ++s) {
    if (layout.event_sets[s].binding == "perf") CHECK(source->reset(s).empty());
  }
  std::vector<std::int64_t> again(layout.counters.size());
  source->read(again, failures);
  for (std::size_t i = 0; i < layout.counters.size(); ++i) {
    if (request.events[layout.counters[i].event] == "perf::CPU-CLOCK") CHECK(again[i] < after[i]);
  }
}
