#include "collectors/perf/pfm_encoder.h"

#include <perfmon/pfmlib_perf_event.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "collectors/events/vocabulary.h"

namespace hwperf::perf {

void initialize_pfm() {
  static std::once_flag once;
  static int result = PFM_SUCCESS;
  std::call_once(once, [] { result = pfm_initialize(); });
  if (result != PFM_SUCCESS) {
    const char* forced = std::getenv("LIBPFM_FORCE_PMU");
    throw std::runtime_error(std::string("libpfm4 cannot start: ") + pfm_strerror(result) +
                             (forced != nullptr
                                  ? std::string(" (LIBPFM_FORCE_PMU=") + forced +
                                        " names a PMU this libpfm4 does not know; unset it)"
                                  : ""));
  }
}

std::string core_pmu_text() {
  try {
    initialize_pfm();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  std::vector<std::string> cores;
  int pmu = 0;
  pfm_for_all_pmus(pmu) {
    pfm_pmu_info_t info;
    std::memset(&info, 0, sizeof info);
    info.size = sizeof info;
    if (pfm_get_pmu_info(static_cast<pfm_pmu_t>(pmu), &info) != PFM_SUCCESS) continue;
    if (info.is_present && info.type == PFM_PMU_TYPE_CORE) {
      cores.push_back(std::string(info.name) + " (" + info.desc + ")");
    }
  }
  if (cores.empty()) return "libpfm4 knows no core PMU of this CPU";
  std::string text = "libpfm4's core PMU is " + cores.front();
  for (std::size_t i = 1; i < cores.size(); ++i)
    text += (i + 1 == cores.size() ? " and " : ", ") + cores[i];
  return text;
}

EventEncoding encode_event(const std::string& name, CountingDomain domain) {
  initialize_pfm();
  std::string counted = name;
  if (events::is_preset(name)) {
    const auto generic = events::generic_equivalent(name);
    if (!generic) {
      throw std::invalid_argument(
          name +
          ": PAPI defines no native events for it on this CPU (or cannot start, or does not know "
          "the name), and no kernel generic event has exactly its meaning; name the native "
          "event instead (`papi_native_avail` lists this CPU's)");
    }
    counted = *generic;
  }
  if (events::has_cpu_qualifier(counted)) {
    throw std::invalid_argument(name + ": remove the cpu= qualifier; per_cpu chooses CPUs");
  }
  if (const auto sampling = events::sampling_qualifier(counted)) {
    throw std::invalid_argument(name + ": remove " + *sampling +
                                "; the exporter counts, and a sampling event would signal it");
  }
  const int plm = domain == CountingDomain::user     ? PFM_PLM3
                  : domain == CountingDomain::kernel ? PFM_PLM0
                                                     : PFM_PLM0 | PFM_PLM3;
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  pfm_perf_encode_arg_t arg;
  std::memset(&arg, 0, sizeof arg);
  arg.attr = &attr;
  arg.size = sizeof arg;
  const int status = pfm_get_os_event_encoding(counted.c_str(), plm, PFM_OS_PERF_EVENT_EXT, &arg);
  if (status != PFM_SUCCESS) {
    // With LIBPFM_FORCE_PMU set, libpfm4 knows that PMU's events only, not even perf::'s.
    const char* forced = std::getenv("LIBPFM_FORCE_PMU");
    throw UnknownEvent(name + ": " + pfm_strerror(status) +
                       (forced != nullptr
                            ? " (LIBPFM_FORCE_PMU=" + std::string(forced) +
                                  " is set, which leaves libpfm4 that PMU's events only; unset it)"
                            : std::string(" (`papi_native_avail` lists the events this machine "
                                          "knows)")));
  }
  if (attr.sample_period != 0 || attr.freq != 0) {
    throw std::invalid_argument(name + ": a sampling event; the exporter only counts");
  }
  EventEncoding encoding;
  encoding.name = name;
  encoding.type = attr.type;
  encoding.config = attr.config;
  encoding.config1 = attr.config1;
  encoding.config2 = attr.config2;
  encoding.exclude_user = attr.exclude_user != 0;
  encoding.exclude_kernel = attr.exclude_kernel != 0;
  encoding.exclude_hv = attr.exclude_hv != 0;
  return encoding;
}

}  // namespace hwperf::perf
