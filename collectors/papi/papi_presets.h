// PAPI's answer to events/presets.h: which native event a preset is on this CPU, for the
// collectors that count through the perf backend. The registry hands it to them.
#pragma once

#include "collectors/events/presets.h"

namespace hwperf::papi {

// The one catalog of the process; PAPI is initialised on the first lookup of a preset.
const events::PresetCatalog& preset_catalog();

}  // namespace hwperf::papi
