#include "collectors/papi/papi_placement.h"

namespace hwperf::papi {

const char* to_string(Binding binding) {
  return binding == Binding::cpu_attach ? "cpu_attach" : "qualifier";
}

Placement place_events(unsigned cpu, const std::vector<std::size_t>& events, PapiAttachMode mode,
                       const SetBuilder& build, const std::string& conflict_reason,
                       const std::string& conflict_remedy) {
  Placement placement;
  std::vector<std::size_t> pending = events;
  Binding binding = mode == PapiAttachMode::qualifier ? Binding::qualifier : Binding::cpu_attach;
  while (!pending.empty()) {
    const Binding use = binding;
    binding = Binding::qualifier;  // only the first set of a CPU can be attached
    SetOutcome outcome = build(use, pending);

    if (outcome.setup_failed) {
      if (use == Binding::cpu_attach && mode == PapiAttachMode::automatic &&
          outcome.attach_unsupported) {
        placement.attach_fell_back = true;
        placement.fallback_reason = outcome.setup_reason;
        continue;  // the same events, bound by qualifier
      }
      for (std::size_t event : pending) {
        placement.dropped.push_back({event, cpu, outcome.setup_reason, outcome.setup_remedy});
      }
      break;
    }
    for (auto& drop : outcome.dropped) placement.dropped.push_back(std::move(drop));
    if (outcome.placed.empty() && !outcome.overflow.empty()) {
      placement.dropped.push_back(
          {outcome.overflow.front(), cpu, conflict_reason, conflict_remedy});
      outcome.overflow.erase(outcome.overflow.begin());
    }
    pending = std::move(outcome.overflow);
  }
  return placement;
}

}  // namespace hwperf::papi
