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
  std::string papi_version;    // "7.0.0.0"
  std::string cpu_vendor;      // PAPI_hw_info_t::vendor_string ("GenuineIntel")
  std::string cpu_model_name;  // PAPI_hw_info_t::model_string
  int cpu_family = 0;
  int cpu_model = 0;
  std::optional<std::string> forced_pmu;  // LIBPFM_FORCE_PMU, when set
  std::string paranoid;                   // kernel.perf_event_paranoid as read under --path.procfs
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

// PAPI before 7.1.0 reads every event set with rdpmc when its perf_event component found rdpmc
// usable (PAPI 7.0.0 perf_event.c: _pe_read takes _pe_rdpmc_read whenever
// cmp_info.fast_counter_read is set and the set does not inherit). rdpmc reads the counter of
// the CPU the reading thread runs on, so for a set counting another CPU, as every set here does
// (PAPI_GRN_SYS, read from whichever HTTP worker scrapes), the value is silently wrong; the
// kernel does not refuse. PAPI 7.1.0 reads such sets with read() (upstream commit 4f63dfe9b,
// "don't use fast rdpmc counter reads in attach or syswide scenarios"). The flag lives in the
// component's info, which PAPI_get_component_info returns a pointer to and _pe_read consults on
// every read, so clearing it right after PAPI_library_init, before any event set exists, makes
// PAPI 7.0 read() like 7.1.
constexpr int kPapiVersionWithSafeFastRead = (7 << 24) | (1 << 16);  // PAPI_VERSION_NUMBER(7,1,0,0)

// Clears the fast read flag of the perf_event component's info when this PAPI (its
// PAPI_LIB_VERSION) would misuse it, and returns what was done, for the log and --check-config;
// nothing when the flag was already off or this PAPI is safe. ComponentInfo is
// PAPI_component_info_t, or a test's stand-in with the same field.
template <typename ComponentInfo>
std::optional<std::string> turn_off_unsafe_fast_read(int papi_version, ComponentInfo& info) {
  if (papi_version >= kPapiVersionWithSafeFastRead || !info.fast_counter_read) return std::nullopt;
  info.fast_counter_read = 0;
  return std::string(
      "rdpmc fast counter reads turned off: PAPI before 7.1.0 would read each CPU's counters "
      "with rdpmc on whichever CPU the scrape runs, and get another CPU's counts (fixed in PAPI "
      "7.1.0); every read is a read() system call instead");
}

}  // namespace hwperf::papi
