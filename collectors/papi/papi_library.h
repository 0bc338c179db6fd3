// Library-wide PAPI state (PAPI_library_init, PAPI_thread_init, PAPI_multiplex_init), created
// once per process and shared by every source, so it outlives every event set. It is never
// re-created: PAPI 7.0.0 crashes in PAPI_library_init after a PAPI_shutdown.
#pragma once

#include <signal.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "collectors/events/presets.h"

namespace hwperf::papi {

// The signal PAPI's perf_event component delivers counter overflows with (SIGRTMIN+2); blocked in
// every thread once the library initialises, since its default action ends the process.
inline int overflow_signal() { return SIGRTMIN + 2; }

// PAPI cannot count CPU events on this machine at all (its perf_event component is disabled, or
// the library does not start). reason() is the stable hwperf_papi_available label value; what()
// says the cause and the remedy.
class UnavailableError : public std::runtime_error {
 public:
  UnavailableError(std::string reason, const std::string& message);
  const std::string& reason() const noexcept { return reason_; }

 private:
  std::string reason_;
};

class Library {
 public:
  // The library, initialised on first use. Throws UnavailableError with the cause and the
  // remedy; kernel.perf_event_paranoid is read under `procfs` where permissions are the cause.
  static std::shared_ptr<Library> instance(const std::string& procfs);
  // The library once instance() has succeeded; nullptr before or when it failed.
  static std::shared_ptr<Library> existing();
  // PAPI_get_opt(PAPI_LIB_VERSION) of the libpapi this process runs with; 0 if
  // PAPI_library_init failed.
  static int runtime_version();

  ~Library();
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  // Why PAPI_multiplex_init failed; "" when it did not.
  const std::string& multiplex_problem() const { return multiplex_problem_; }
  // What was done about PAPI's rdpmc fast read (papi_diagnosis.h); "" when nothing was needed.
  const std::string& fast_read_note() const { return fast_read_note_; }

 private:
  struct State;
  Library(std::string multiplex_problem, std::string fast_read_note);
  static const State& shared_state();
  static State initialise();

  std::string multiplex_problem_;
  std::string fast_read_note_;
};

// Initialises PAPI once per process (library, threads, multiplexing) and checks that its
// perf_event component is usable. Throws UnavailableError naming the real cause and the remedy,
// with kernel.perf_event_paranoid as read under `procfs` (--path.procfs) where that is the cause.
void init_library(const std::string& procfs);

struct EventLookup {
  bool known = false;
  bool available = false;   // PAPI_query_named_event: PAPI has a recipe for it on this CPU model
  std::string error;        // PAPI_strerror when unknown
  std::string description;  // PAPI's long description when known
  // Native events a preset is derived from here (PAPI_event_info_t.count), each one perf event
  // and one descriptor per CPU; 1 for a native event or an undefined preset.
  unsigned native_terms = 1;
  // For a preset PAPI defines here: its recipe as a sum of native events (one term for a preset
  // defined as one native event), what another backend can count it as; or why it is not one.
  events::Derivation derivation;
};
// Whether PAPI knows this event name (with its qualifiers) at all. Knowing is not counting:
// PAPI_TOT_INS is known on a machine without a PMU; open_papi_source() finds out the rest.
// Call init_library() first (std::logic_error otherwise).
EventLookup lookup_event(const std::string& event);

// "7.0.0.0" from a PAPI_VERSION_NUMBER.
std::string version_text(int version);

}  // namespace hwperf::papi

namespace hwperf {

// "7.0.0.0": the version of the libpapi this process runs with (PAPI_LIB_VERSION, for
// hwperf_build_info and --version); the one it was built against if PAPI cannot initialise.
std::string papi_library_version();

}  // namespace hwperf
