#include "collectors/papi/papi_remedies.h"

#include <papi.h>

#include "collectors/papi/papi_diagnosis.h"
#include "collectors/perf/perf_event.h"

namespace hwperf::papi {

std::string error_text(int code) {
  const char* text = PAPI_strerror(code);
  return text != nullptr ? std::string(text) : "PAPI error " + std::to_string(code);
}

// What the user can do about an error from adding or starting an event on a CPU.
std::string remedy_for(int code, const PathsConfig& paths) {
  switch (code) {
    case PAPI_EPERM: return permission_remedy(paths.procfs);
    case PAPI_ENOEVNT:
      return "PAPI knows this event but the kernel cannot count it on this CPU (no hardware PMU, "
             "as in a VM without PMU passthrough, or not on this CPU model); papi_avail -a and "
             "papi_native_avail on this host list what can be counted";
    case PAPI_ECNFLCT:
    case PAPI_ECOUNT:
      return "not enough free hardware counters and PAPI could not multiplex them: count fewer "
             "events, keep collectors.papi.multiplex: true, or free counters (sysctl "
             "kernel.nmi_watchdog=0; stop other perf users)";
    case PAPI_ESYS:
    case PAPI_EINVAL:
      return "check that the CPU is online (" + paths.sysfs +
             "/devices/system/cpu/cpuN/online) and that the event's qualifiers are valid "
             "(papi_native_avail -e EVENT)";
    case PAPI_ECMP:
    case PAPI_ENOSUPP:
      return "the PAPI component of this event cannot count it system-wide per CPU";
    default: return "see papi_avail and papi_native_avail for what this host can count";
  }
}

std::string permission_remedy(const std::string& procfs) {
  return permission_remedy_text(perf::paranoid_setting(procfs));
}

}  // namespace hwperf::papi
