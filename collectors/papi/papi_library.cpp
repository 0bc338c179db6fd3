// Why the library is created once and never again: see papi_library.h.
#include "collectors/papi/papi_library.h"

#include <link.h>
#include <papi.h>
#include <pthread.h>
#include <signal.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <utility>

#include "collectors/papi/papi_diagnosis.h"
#include "collectors/papi/papi_remedies.h"
#include "collectors/perf/perf_event.h"

namespace hwperf::papi {
namespace {

unsigned long current_thread_id() { return static_cast<unsigned long>(pthread_self()); }

// The libpfm4 this process loaded (through libpapi), which LD_LIBRARY_PATH or a second install
// may make another than the one the package manager shows.
std::string loaded_libpfm_path() {
  std::string path;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* out) {
        const std::string name = info->dlpi_name != nullptr ? info->dlpi_name : "";
        if (name.find("libpfm.so") == std::string::npos) return 0;
        *static_cast<std::string*>(out) = name;
        return 1;
      },
      &path);
  std::error_code error;
  const auto resolved = std::filesystem::canonical(path, error);
  return error ? path : resolved.string();
}

}  // namespace

std::string version_text(int version) {
  return std::to_string(PAPI_VERSION_MAJOR(version)) + "." +
         std::to_string(PAPI_VERSION_MINOR(version)) + "." +
         std::to_string(PAPI_VERSION_REVISION(version)) + "." +
         std::to_string(PAPI_VERSION_INCREMENT(version));
}

struct Library::State {
  std::shared_ptr<Library> library;
  std::optional<ComponentReport> component;  // why there is no library, when perf_event is off
  std::string failure_reason;                // else why there is no library
  std::string failure;
  int version = 0;
};

std::shared_ptr<Library> Library::instance(const std::string& procfs) {
  const State& state = shared_state();
  if (state.library) return state.library;
  if (state.component) {
    ComponentReport report = *state.component;
    report.paranoid = perf::paranoid_setting(procfs);
    Unavailable unavailable = diagnose_component(report);
    throw UnavailableError(std::move(unavailable.reason), unavailable.message);
  }
  throw UnavailableError(state.failure_reason, state.failure);
}

std::shared_ptr<Library> Library::existing() { return shared_state().library; }

int Library::runtime_version() { return shared_state().version; }

Library::~Library() { PAPI_shutdown(); }

Library::Library(std::string multiplex_problem, std::string fast_read_note)
    : multiplex_problem_(std::move(multiplex_problem)),
      fast_read_note_(std::move(fast_read_note)) {}

// A function-local static: initialised exactly once, thread-safely, on first use.
const Library::State& Library::shared_state() {
  static const State state = initialise();
  return state;
}

Library::State Library::initialise() {
  State state;
  // PAPI's perf_event component arms overflow with SIGRTMIN+2 (hardware_intr_sig in
  // src/components/perf_event/perf_event.c); its default action ends the process. Sampling
  // qualifiers are refused in the configuration (period=, freq=); this is the second guard:
  // blocked here, on the startup thread, before any owner, guard or HTTP thread exists, so that
  // every thread inherits the mask and a stray overflow stays pending instead of killing us.
  sigset_t overflow;
  sigemptyset(&overflow);
  sigaddset(&overflow, overflow_signal());
  pthread_sigmask(SIG_BLOCK, &overflow, nullptr);
  const int version = PAPI_library_init(PAPI_VER_CURRENT);
  if (version != PAPI_VER_CURRENT) {
    state.failure_reason = "init_failed";
    state.failure =
        "papi: PAPI_library_init failed: " +
        (version < 0 ? error_text(version)
                     : "the PAPI library is version " + std::to_string(version) +
                           ", this exporter was built for " + std::to_string(PAPI_VER_CURRENT)) +
        "; check the libpapi installation (papi_component_avail)";
    return state;
  }
  state.version = PAPI_get_opt(PAPI_LIB_VERSION, nullptr);
  // Before any owner thread or HTTP worker exists: PAPI must know how to tell threads apart.
  if (const int rc = PAPI_thread_init(current_thread_id); rc != PAPI_OK) {
    state.failure_reason = "init_failed";
    state.failure = "papi: PAPI_thread_init failed: " + error_text(rc);
    return state;
  }
  std::string multiplex_problem;
  if (const int rc = PAPI_multiplex_init(); rc != PAPI_OK) {
    multiplex_problem = "PAPI_multiplex_init failed: " + error_text(rc);
  }
  // Without its perf_event component PAPI knows no CPU events at all, and every event would
  // look "unknown"; say what is really wrong instead.
  const int cidx = PAPI_get_component_index("perf_event");
  const PAPI_component_info_t* info = cidx < 0 ? nullptr : PAPI_get_component_info(cidx);
  if (info == nullptr) {
    state.failure_reason = "no_perf_event_component";
    state.failure =
        "papi: this PAPI has no perf_event component, so it cannot count CPU events; "
        "install a PAPI built with it (Debian's libpapi7.0 is)";
    return state;
  }
  if (info->disabled != 0) {
    ComponentReport report;
    report.disabled_reason = info->disabled_reason;
    report.libpfm_path = loaded_libpfm_path();
    report.papi_version = version_text(state.version);
    // The hardware description comes from PAPI's OS layer, which works without perf_event.
    if (const PAPI_hw_info_t* hw = PAPI_get_hardware_info(); hw != nullptr) {
      report.cpu_vendor = hw->vendor_string;
      report.cpu_model_name = hw->model_string;
      report.cpu_family = hw->cpuid_family;
      report.cpu_model = hw->cpuid_model;
    }
    if (const char* forced = std::getenv("LIBPFM_FORCE_PMU"); forced != nullptr) {
      report.forced_pmu = forced;
    }
    state.component = std::move(report);
    return state;
  }
  // Before any event set exists. PAPI_get_component_info hands out a const pointer into the
  // component's vector, a writable global (_perf_event_vector), so writing through it is sound.
  const auto fast_read_note =
      turn_off_unsafe_fast_read(state.version, *const_cast<PAPI_component_info_t*>(info));
  state.library.reset(
      new Library(std::move(multiplex_problem), fast_read_note.value_or(std::string())));
  return state;
}

UnavailableError::UnavailableError(std::string reason, const std::string& message)
    : std::runtime_error(message), reason_(std::move(reason)) {}

void init_library(const std::string& procfs) { Library::instance(procfs); }

EventLookup lookup_event(const std::string& event) {
  if (!Library::existing()) throw std::logic_error("papi: lookup_event before init_library");
  EventLookup lookup;
  int code = 0;
  if (const int rc = PAPI_event_name_to_code(event.c_str(), &code); rc != PAPI_OK) {
    lookup.error = error_text(rc);
    return lookup;
  }
  lookup.known = true;
  lookup.available = PAPI_query_named_event(event.c_str()) == PAPI_OK;
  PAPI_event_info_t info{};
  if (PAPI_get_event_info(code, &info) == PAPI_OK) {
    lookup.description = info.long_descr[0] != '\0' ? info.long_descr : info.short_descr;
    if (lookup.available && info.count > 1) lookup.native_terms = info.count;
    // Presets only: a native event's info has no derivation (and count 1, itself).
    if (lookup.available && IS_PRESET(code)) {
      std::vector<std::string> natives;
      for (unsigned i = 0; i < info.count && i < PAPI_MAX_INFO_TERMS; ++i) {
        natives.emplace_back(info.name[i]);
      }
      lookup.derivation = events::linear_derivation(info.derived, info.postfix, natives);
    }
  }
  return lookup;
}

}  // namespace hwperf::papi

namespace hwperf {

std::string papi_library_version() {
  // The libpapi actually loaded, which may be a newer patch release than the papi.h this was
  // built with; the build's version only if PAPI cannot even initialise.
  const int runtime = papi::Library::runtime_version();
  return papi::version_text(runtime > 0 ? runtime : PAPI_VERSION);
}

}  // namespace hwperf
