// What PAPI knows of a preset on this machine, for the collectors that count with the kernel's
// perf interface directly (process targets, containers). They accept PAPI presets in their event
// lists, but only PAPI knows which native events a preset is on this CPU; the papi collector's
// folder answers through this seam (papi/papi_presets.h), which the registry hands to every
// collector, so no collector below it includes PAPI's folder.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/interface.h"

namespace hwperf::events {

// One native event of a preset's definition and the integer its count is multiplied by.
struct PresetTerm {
  std::string native;
  std::int64_t coefficient = 1;
};

// A preset as a sum of native events times integers, or why it is not one.
struct Derivation {
  std::vector<PresetTerm> terms;  // empty when refused
  std::string refused;            // why not, "" when it is
};

// PAPI's definition of a preset (PAPI_get_event_info: `derived`, `postfix` and the names of its
// `count` native events, name[]) as a sum of native events times integers, which a counting
// layer computes from counts of its own: NOT_DERIVED (one native event), DERIVED_ADD (their
// sum), DERIVED_SUB (the first minus the others) and a DERIVED_POSTFIX formula of + and - whose
// only factors are integers (papi_events.csv, PAPI 7.0: PAPI_DP_OPS on Ice Lake-SP is
// N0|N1|2|*|+|N2|4|*|+|N3|8|*|+|). Refused, saying why: a rate (DERIVED_PS, DERIVED_ADD_PS, #
// for the clock), a division, a product of two events, an added constant.
Derivation linear_derivation(std::string_view derived, std::string_view postfix,
                             const std::vector<std::string>& natives);

// "L1D:REPLACEMENT + L2_RQSTS:ALL_CODE_RD", "A - B", "A + 2 x B": a derivation for messages.
std::string derivation_text(const std::vector<PresetTerm>& terms);

struct PresetDefinition {
  bool known = false;      // PAPI has the name
  bool available = false;  // PAPI has a recipe for it on this CPU model
  unsigned native_terms = 1;
  // Where available: PAPI's recipe as a sum of native events (one term, coefficient 1, for a
  // preset defined as one native event), or why it is not one.
  Derivation derivation;
  // The one native event PAPI defines the preset as here, not derived; "" otherwise.
  std::string single_native() const;
};

class PresetCatalog : public Interface {
 public:
  // The preset as PAPI defines it here; nullopt when PAPI cannot start, so only the kernel's
  // generic equivalent is left (events/vocabulary.h).
  virtual std::optional<PresetDefinition> lookup(const std::string& preset,
                                                 const std::string& procfs) const = 0;
};

}  // namespace hwperf::events
