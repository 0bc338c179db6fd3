// What PAPI says went wrong, and what the user can do about it, in one place.
#pragma once

#include <string>

#include "collectors/papi/papi_config.h"

namespace hwperf::papi {

// PAPI_strerror, or "PAPI error N" for a code it does not know.
std::string error_text(int code);
// What the user can do about an error from adding or starting an event on a CPU; remedies name
// files under `paths` (--path.procfs for kernel.perf_event_paranoid, --path.sysfs).
std::string remedy_for(int code, const PathsConfig& paths);
// The remedy for permission errors, with kernel.perf_event_paranoid as read under `procfs`.
std::string permission_remedy(const std::string& procfs);

}  // namespace hwperf::papi
