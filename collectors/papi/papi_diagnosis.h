// Why PAPI cannot count on this machine, in words a user can act on. Pure: what PAPI and the
// system report goes in, the reason label and the log text come out, so every case is unit
// tested without breaking PAPI for real.
#pragma once

#include <optional>
#include <string>

namespace hwperf::papi {

// What PAPI reports when its perf_event component did not start.
struct ComponentReport {
  std::string disabled_reason;  // PAPI_component_info_t::disabled_reason
  // The file of the libpfm.so.4 this process loaded, links resolved ("libpfm.so.4.13.0"); "" when
  // unknown. libpfm4's own version (support_version) is no help: 4.13.0 and 4.13.0+git99 both
  // report the API version "4.0".
  std::string libpfm_path;
  std::string papi_version;     // "7.0.0.0"
  std::string cpu_vendor;       // PAPI_hw_info_t::vendor_string ("GenuineIntel")
  std::string cpu_model_name;   // PAPI_hw_info_t::model_string
  int cpu_family = 0;
  int cpu_model = 0;
  std::optional<std::string> forced_pmu;  // LIBPFM_FORCE_PMU, when set
  std::string paranoid;  // kernel.perf_event_paranoid as read under --path.procfs
};

struct Unavailable {
  std::string reason;   // stable label value of hwperf_papi_available
  std::string message;  // the log line: the cause and what to do
};

// Stable reasons: unknown_cpu, forced_pmu_unknown, permission_denied, no_perf_event,
// component_disabled.
Unavailable diagnose_component(const ComponentReport& report);

// "GenuineIntel family 6 model 207 (0xcf, INTEL(R) XEON(R) ...)".
std::string describe_cpu(const ComponentReport& report);

// The remedy text for permission errors, given kernel.perf_event_paranoid as read.
std::string permission_remedy_text(const std::string& paranoid);

}  // namespace hwperf::papi
