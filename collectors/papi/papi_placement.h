// How one CPU's events are spread over PAPI event sets: which set is attached, when to fall
// back to per-CPU qualifiers, and how events that do not fit the counters move on to further
// sets. Pure: papi_source.cpp runs it against PAPI, the unit tests against a fake builder.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "collectors/papi/counter_source.h"
#include "collectors/papi/papi_config.h"

namespace hwperf::papi {

// cpu_attach: PAPI_CPU_ATTACH; qualifier: cpu=N event qualifiers (see papi_source.cpp).
enum class Binding { cpu_attach, qualifier };
const char* to_string(Binding binding);

// What building and starting one event set gave.
struct SetOutcome {
  bool setup_failed = false;        // creating or binding the set failed; nothing was added
  bool attach_unsupported = false;  // ...because PAPI cannot attach counters to this CPU
  std::string setup_reason;         // PAPI_strerror of the failure
  std::string setup_remedy;
  std::vector<std::size_t> placed;      // events now counting in the set, in read order
  std::vector<std::size_t> overflow;    // events that did not fit the set's counters
  std::vector<DroppedCounter> dropped;  // events the set refused for any other reason
};

// Builds and starts one event set on the CPU with as many of `pending` as fit.
using SetBuilder =
    std::function<SetOutcome(Binding binding, const std::vector<std::size_t>& pending)>;

struct Placement {
  std::vector<DroppedCounter> dropped;
  bool attach_fell_back = false;  // auto mode found this CPU cannot attach
  std::string fallback_reason;
};

// The rules, applied to the events of one CPU (and one PAPI component):
//  - the first set is attached, unless `mode` is qualifier;
//  - in auto mode, a CPU that cannot attach (attach_unsupported) uses qualifier sets instead;
//    in cpu_attach mode its events are dropped with the reason;
//  - events that do not fit move on to a further set, always a qualifier set (PAPI runs only
//    one attached set per CPU);
//  - an event that does not fit even an otherwise empty set is dropped with `conflict_reason`,
//    which also guarantees the loop ends.
Placement place_events(unsigned cpu, const std::vector<std::size_t>& events, PapiAttachMode mode,
                       const SetBuilder& build, const std::string& conflict_reason,
                       const std::string& conflict_remedy);

}  // namespace hwperf::papi
