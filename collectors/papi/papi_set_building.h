// Building PAPI event sets: what PAPI says of each configured event (looked up once for all
// CPUs), and one event set built and started on an owner thread for as many events as fit.
// papi_source.cpp says how sets are bound to CPUs and why each needs an owner. Internal to
// collectors/papi; papi.h stays in the .cpp.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "collectors/papi/papi_owner.h"
#include "collectors/papi/papi_placement.h"
#include "collectors/papi/papi_source.h"

namespace hwperf::papi {

// PAPI_OK and PAPI_NULL, which papi_set_building.cpp checks against papi.h.
inline constexpr int kPapiOk = 0;
inline constexpr int kPapiNull = -1;

// What PAPI says about one configured event, looked up once for all CPUs.
struct EventPlan {
  std::size_t index = 0;  // into OpenRequest::events
  std::string name;       // as configured
  int component = -1;
  std::string native;         // what the qualifier binding adds: the native event name
  int unavailable = kPapiOk;  // an error that holds on every CPU
  std::string unavailable_reason;
  std::string unavailable_remedy;
  std::string no_qualifier_reason;  // why the qualifier binding cannot take it ("" = it can)
};

struct Failure {
  std::size_t event = 0;
  int code = kPapiOk;
};

struct FillResult {
  int setup_error = kPapiOk;  // creating or binding the set failed; nothing was added
  std::string setup_step;
  std::vector<std::size_t> placed;    // events counting in the started set, in PAPI's order
  std::vector<std::size_t> overflow;  // events that did not fit and go to a further set
  std::vector<Failure> failed;
  std::vector<std::size_t> not_qualifiable;
  std::vector<std::size_t> to_perf;  // beyond the counters: counted through the perf backend
  bool multiplexed = false;
  int multiplex_error = kPapiOk;
  int handle = kPapiNull;
};

// Looks every event of the request up in PAPI: its component, the native event a preset is bound
// through by qualifier, and what keeps it from being counted on any CPU.
std::vector<EventPlan> plan_events(const OpenRequest& request);

// Runs on the owner thread: builds one event set on `cpu` for as many of `pending` as fit, and
// starts it. The set joins the owner's sets only if it started.
FillResult fill_set(OwnerThread& owner, Binding binding, unsigned cpu, int component,
                    const std::vector<const EventPlan*>& pending, const OpenRequest& request);

}  // namespace hwperf::papi
