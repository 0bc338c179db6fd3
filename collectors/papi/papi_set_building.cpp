#include "collectors/papi/papi_set_building.h"

#include <papi.h>

#include "collectors/events/vocabulary.h"
#include "collectors/papi/papi_event_set.h"
#include "collectors/papi/papi_remedies.h"

namespace hwperf::papi {

static_assert(kPapiOk == PAPI_OK && kPapiNull == PAPI_NULL, "papi.h changed its constants");

std::vector<EventPlan> plan_events(const OpenRequest& request) {
  std::vector<EventPlan> plans;
  for (std::size_t i = 0; i < request.events.size(); ++i) {
    EventPlan plan;
    plan.index = i;
    plan.name = request.events[i];
    plan.native = plan.name;
    int code = 0;
    if (const int rc = PAPI_event_name_to_code(plan.name.c_str(), &code); rc != PAPI_OK) {
      plan.unavailable = rc;
      plan.unavailable_reason = error_text(rc);
      plan.unavailable_remedy =
          "PAPI does not know this event here; see papi_avail and "
          "papi_native_avail";
      plans.push_back(std::move(plan));
      continue;
    }
    plan.component = PAPI_get_event_component(code);
    if (events::is_preset(plan.name)) {
      PAPI_event_info_t info{};
      if (PAPI_get_event_info(code, &info) == PAPI_OK) {
        const std::string derived = info.derived;
        if (info.count == 0) {
          // papi_avail still lists such presets; PAPI just has no recipe for this CPU model.
          plan.unavailable = PAPI_ENOEVNT;
          plan.unavailable_reason = error_text(PAPI_ENOEVNT);
          plan.unavailable_remedy =
              "PAPI defines no native events for this preset on this CPU model (papi_avail -a "
              "lists the presets available here)";
        } else if (info.count == 1 && (derived.empty() || derived == "NOT_DERIVED")) {
          plan.native = info.name[0];
        } else {
          plan.no_qualifier_reason =
              plan.name + " is derived from " + std::to_string(info.count) + " native events (" +
              derived +
              "), and only single-event presets can be bound to a CPU by qualifier; count it "
              "where PAPI_CPU_ATTACH works, or list its native events instead";
        }
      }
    }
    plans.push_back(std::move(plan));
  }
  return plans;
}

FillResult fill_set(OwnerThread& owner, Binding binding, unsigned cpu, int component,
                    const std::vector<const EventPlan*>& pending, const OpenRequest& request) {
  FillResult result;
  if (owner.registration() != PAPI_OK) {
    result.setup_error = owner.registration();
    result.setup_step = "PAPI_register_thread";
    return result;
  }
  EventSet set;
  const char* step = "";
  if (const int rc = set.create(component, step); rc != PAPI_OK) {
    result.setup_error = rc;
    result.setup_step = step;
    return result;
  }
  if (binding == Binding::cpu_attach) {
    if (const int rc = set.attach_cpu(cpu); rc != PAPI_OK) {
      result.setup_error = rc;
      result.setup_step = "PAPI_set_opt(PAPI_CPU_ATTACH)";
      return result;
    }
    // PAPI's default domain is user only; system-wide counting means both unless configured.
    if (const int rc = set.set_domain(request.domain); rc != PAPI_OK) {
      result.setup_error = rc;
      result.setup_step = "PAPI_set_opt(PAPI_DOMAIN)";
      return result;
    }
  }
  // A set that refuses for want of counters is full: the rest go to a further set untried. After
  // a few conflicts in a row it is treated as full too, so that placing n events costs O(n) adds,
  // not one add of every remaining event per set (2,000 events took 10 s, 10,000 minutes).
  constexpr std::size_t kConflictsBeforeFull = 4;
  std::size_t conflicts_in_a_row = 0;
  bool full = false;
  for (const EventPlan* event : pending) {
    if (full) {
      result.overflow.push_back(event->index);
      continue;
    }
    std::string name = event->name;
    if (binding == Binding::qualifier) {
      if (!event->no_qualifier_reason.empty()) {
        result.not_qualifiable.push_back(event->index);
        continue;
      }
      name = events::cpu_qualified_name(event->native, cpu, request.domain);
    }
    const bool perf_can_count = request.multiplex && event->no_qualifier_reason.empty();
    if (perf_can_count && result.placed.size() >= request.counters_per_set) {
      result.to_perf.push_back(event->index);
      continue;
    }
    int rc = set.add(name);
    if ((rc == PAPI_ECNFLCT || rc == PAPI_ECOUNT) && perf_can_count) {
      result.to_perf.push_back(event->index);
      continue;
    }
    if ((rc == PAPI_ECNFLCT || rc == PAPI_ECOUNT) && request.multiplex && !result.multiplexed &&
        result.multiplex_error == PAPI_OK) {
      const int mrc = set.multiplex();
      if (mrc == PAPI_OK) {
        result.multiplexed = true;
        rc = set.add(name);
      } else {
        result.multiplex_error = mrc;
      }
    }
    if (rc == PAPI_OK) {
      result.placed.push_back(event->index);
      conflicts_in_a_row = 0;
    } else if (rc == PAPI_ECNFLCT || rc == PAPI_ECOUNT) {
      result.overflow.push_back(event->index);
      full = rc == PAPI_ECOUNT || ++conflicts_in_a_row >= kConflictsBeforeFull;
    } else {
      result.failed.push_back({event->index, rc});
    }
  }
  if (result.placed.empty()) return result;
  if (const int rc = set.start(); rc != PAPI_OK) {
    for (std::size_t index : result.placed) result.failed.push_back({index, rc});
    result.placed.clear();
    return result;
  }
  result.handle = set.handle();
  owner.sets().push_back(std::move(set));
  return result;
}

}  // namespace hwperf::papi
