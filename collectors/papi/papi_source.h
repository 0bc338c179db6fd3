// The real CounterSource, over PAPI: planning which events go into which event set on which CPU,
// and opening them. Internal to collectors/papi; papi.h stays in the .cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "collectors/papi/counter_source.h"
#include "collectors/papi/papi_config.h"

namespace hwperf::papi {

struct OpenRequest {
  std::vector<std::string> events;  // every one known to PAPI (lookup_event)
  std::vector<unsigned> cpus;
  CountingDomain domain = CountingDomain::all;
  PapiAttachMode attach = PapiAttachMode::automatic;
  // More events than counters: events beyond what a set holds are counted through the perf
  // backend, scaled by each read interval's own running share, instead of PAPI's multiplexing,
  // which scales by the lifetime share (papi_source.cpp).
  bool multiplex = true;
  // A test seam: a set takes at most this many events, as if the PMU had no more counters, so
  // that the perf-backed path runs on machines whose software events never conflict.
  std::size_t counters_per_set = SIZE_MAX;
  PathsConfig paths;  // --path.procfs and --path.sysfs, named in remedies
};
// Opens and starts every (event, CPU) it can; what it cannot open is in layout().dropped with
// PAPI's reason and the remedy. Throws std::runtime_error only if PAPI itself fails.
std::unique_ptr<CounterSource> open_papi_source(const OpenRequest& request);

}  // namespace hwperf::papi
