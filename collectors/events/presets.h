// What PAPI knows of a preset on this machine, for the collectors that count with the kernel's
// perf interface directly (process targets, containers). They accept PAPI presets in their event
// lists, but only PAPI knows which native event a preset is on this CPU; the papi collector's
// folder answers through this seam (papi/papi_presets.h), which the registry hands to every
// collector, so no collector below it includes PAPI's folder.
#pragma once

#include <optional>
#include <string>

#include "common/interface.h"

namespace hwperf::events {

struct PresetDefinition {
  bool known = false;      // PAPI has the name
  bool available = false;  // PAPI has a recipe for it on this CPU model
  unsigned native_terms = 1;
  // The one native event PAPI defines the preset as here, not derived; "" otherwise.
  std::string single_native;
};

class PresetCatalog : public Interface {
 public:
  // The preset as PAPI defines it here; nullopt when PAPI cannot start, so only the kernel's
  // generic equivalent is left (events/vocabulary.h).
  virtual std::optional<PresetDefinition> lookup(const std::string& preset,
                                                 const std::string& procfs) const = 0;
};

}  // namespace hwperf::events
