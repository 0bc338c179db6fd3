// One PAPI event set, owned: created with its component and PAPI_GRN_SYS, torn down in the
// order PAPI requires (stop, clean up, destroy). papi.h stays in papi_event_set.cpp.
#pragma once

#include <string>

#include "collectors/papi/papi_config.h"

namespace hwperf::papi {

// Move-only; a moved-from set holds PAPI_NULL (-1). Every call returns PAPI_OK or PAPI's error.
class EventSet {
 public:
  EventSet() noexcept = default;
  EventSet(EventSet&& other) noexcept;
  EventSet& operator=(EventSet&& other) noexcept;
  EventSet(const EventSet&) = delete;
  EventSet& operator=(const EventSet&) = delete;
  ~EventSet() { reset(); }

  // Returns PAPI_OK or the error of the step that failed, naming it in `step`.
  int create(int component, const char*& step) noexcept;
  int attach_cpu(unsigned cpu) noexcept;
  int set_domain(CountingDomain domain) noexcept;
  int add(const std::string& name) noexcept;
  int multiplex() noexcept;
  int start() noexcept;
  int handle() const noexcept { return handle_; }
  // Stop (if running), clean up, destroy; afterwards the set holds PAPI_NULL.
  void reset() noexcept;

 private:
  int handle_ = kNull;
  bool running_ = false;
  static constexpr int kNull = -1;  // PAPI_NULL; papi_event_set.cpp checks they agree
};

}  // namespace hwperf::papi
