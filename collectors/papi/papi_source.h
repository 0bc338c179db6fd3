// The real CounterSource, over PAPI. Internal to collectors/papi; papi.h stays in the .cpp.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "collectors/papi/papi_collector.h"
#include "config/config.h"

namespace hwperf::papi {

// PAPI cannot count CPU events on this machine at all (its perf_event component is disabled, or
// the library does not start). reason() is the stable hwperf_papi_available label value; what()
// says the cause and the remedy.
class UnavailableError : public std::runtime_error {
 public:
  UnavailableError(std::string reason, const std::string& message);
  const std::string& reason() const noexcept { return reason_; }

 private:
  std::string reason_;
};

// Initialises PAPI once per process (library, threads, multiplexing) and checks that its
// perf_event component is usable. Throws UnavailableError naming the real cause and the remedy,
// with kernel.perf_event_paranoid as read under `procfs` (--path.procfs) where that is the cause.
void init_library(const std::string& procfs);

struct EventLookup {
  bool known = false;
  bool available = false;   // PAPI_query_named_event: PAPI has a recipe for it on this CPU model
  std::string error;        // PAPI_strerror when unknown
  std::string description;  // PAPI's long description when known
};
// Whether PAPI knows this event name (with its qualifiers) at all. Knowing is not counting:
// PAPI_TOT_INS is known on a machine without a PMU; open_papi_source() finds out the rest.
// Call init_library() first (std::logic_error otherwise).
EventLookup lookup_event(const std::string& event);

struct OpenRequest {
  std::vector<std::string> events;  // every one known to PAPI (lookup_event)
  std::vector<unsigned> cpus;
  CountingDomain domain = CountingDomain::all;
  PapiAttachMode attach = PapiAttachMode::automatic;
  bool multiplex = true;
  PathsConfig paths;  // --path.procfs and --path.sysfs, named in remedies
};
// Opens and starts every (event, CPU) it can; what it cannot open is in layout().dropped with
// PAPI's reason and the remedy. Throws std::runtime_error only if PAPI itself fails.
std::unique_ptr<CounterSource> open_papi_source(const OpenRequest& request);

// The remedy text for permission errors, with kernel.perf_event_paranoid as read from
// <procfs>/sys/kernel/perf_event_paranoid.
std::string permission_remedy(const std::string& procfs);

}  // namespace hwperf::papi
