#include "collectors/papi/papi_presets.h"

#include "collectors/papi/papi_library.h"

namespace hwperf::papi {
namespace {

class PapiPresetCatalog final : public events::PresetCatalog {
 public:
  std::optional<events::PresetDefinition> lookup(const std::string& preset,
                                                 const std::string& procfs) const override {
    try {
      init_library(procfs);
    } catch (const UnavailableError&) {
      return std::nullopt;
    }
    const EventLookup found = lookup_event(preset);
    return events::PresetDefinition{found.known, found.available, found.native_terms,
                                    found.derivation};
  }
};

}  // namespace

const events::PresetCatalog& preset_catalog() {
  static const PapiPresetCatalog catalog;
  return catalog;
}

}  // namespace hwperf::papi
