#include "collectors/papi/papi_diagnosis.h"

#include "collectors/perf/perf_event.h"

#include <cstdio>

namespace hwperf::papi {
namespace {

bool contains(const std::string& text, const char* part) {
  return text.find(part) != std::string::npos;
}

std::string libpfm_text(const ComponentReport& report) {
  return report.libpfm_path.empty() ? std::string("libpfm4")
                                    : "libpfm4 (" + report.libpfm_path + ")";
}

}  // namespace

std::string describe_cpu(const ComponentReport& report) {
  char hex[16];
  std::snprintf(hex, sizeof hex, "%#x", static_cast<unsigned>(report.cpu_model));
  std::string text = (report.cpu_vendor.empty() ? std::string("CPU") : report.cpu_vendor) +
                     " family " + std::to_string(report.cpu_family) + " model " +
                     std::to_string(report.cpu_model) + " (" + hex;
  if (!report.cpu_model_name.empty()) text += ", " + report.cpu_model_name;
  return text + ")";
}

std::string permission_remedy_text(const std::string& paranoid) {
  return "counting every process on a CPU " + perf::system_wide_permission_remedy(paranoid);
}

Unavailable diagnose_component(const ComponentReport& report) {
  const std::string& why = report.disabled_reason;
  const std::string prefix = "papi: PAPI " + report.papi_version +
                             " disabled its perf_event component (\"" + why +
                             "\"), so it counts "
                             "no CPU event here, software events included: ";
  // papi/src/components/perf_event/perf_event.c (_pe_init_component, 7.0.0): after
  // pfm_initialize() succeeds, _pe_libpfm4_init() fails with "no PMUs found" when libpfm4 detects
  // no PMU at all and "no default PMU found" when none of them is this CPU's core PMU: both mean
  // this libpfm4 predates the CPU (or LIBPFM_FORCE_PMU names a PMU it does not have).
  if (contains(why, "no default PMU") || contains(why, "no PMUs found")) {
    if (report.forced_pmu) {
      return {
          "forced_pmu_unknown",
          prefix + "LIBPFM_FORCE_PMU=" + *report.forced_pmu + " is set, and " +
              libpfm_text(report) + " has no PMU of that name for this CPU, " +
              describe_cpu(report) +
              ". Unset LIBPFM_FORCE_PMU, or name a PMU this libpfm4 supports (papi_component_avail "
              "lists them under \"PMUs supported\" once it works)"};
    }
    return {"unknown_cpu",
            prefix + libpfm_text(report) + " does not know this CPU, " + describe_cpu(report) +
                ". Install a libpfm4 that knows it: on Debian 12, scripts/deps.sh installs Debian "
                "13's libpfm4 (same soname, libpfm.so.4); elsewhere libpfm4 4.13.0+git or newer. "
                "Or set LIBPFM_FORCE_PMU to the nearest older PMU of this CPU family that libpfm4 "
                "knows (its hardware events may then be wrong; the generic and software events "
                "stay right)"};
  }
  // _pe_handle_paranoid: paranoid=3 is a distribution patch that disables perf_event entirely.
  if (contains(why, "paranoid")) {
    return {"permission_denied", prefix + permission_remedy_text(report.paranoid)};
  }
  // _pe_handle_paranoid again: PAPI reads /proc/sys/kernel/perf_event_paranoid itself, from this
  // process's /proc, whatever --path.procfs says.
  if (contains(why, "not detected")) {
    return {"no_perf_event",
            prefix +
                "PAPI could not read /proc/sys/kernel/perf_event_paranoid: the kernel has no "
                "perf_event support (CONFIG_PERF_EVENTS), or this process has no /proc "
                "mounted (in a container, keep the container's own /proc)"};
  }
  return {"component_disabled",
          prefix + "papi_component_avail on this host shows the same reason; CPU " +
              describe_cpu(report) + ", " + libpfm_text(report)};
}

}  // namespace hwperf::papi
