#include "collectors/papi/papi_event_set.h"

#include <papi.h>

#include <utility>

namespace hwperf::papi {

static_assert(PAPI_NULL == -1, "EventSet's sentinel must be PAPI_NULL");

EventSet::EventSet(EventSet&& other) noexcept
    : handle_(std::exchange(other.handle_, PAPI_NULL)),
      running_(std::exchange(other.running_, false)) {}

EventSet& EventSet::operator=(EventSet&& other) noexcept {
  if (this != &other) {
    reset();
    handle_ = std::exchange(other.handle_, PAPI_NULL);
    running_ = std::exchange(other.running_, false);
  }
  return *this;
}

int EventSet::create(int component, const char*& step) noexcept {
  reset();
  step = "PAPI_create_eventset";
  if (const int rc = PAPI_create_eventset(&handle_); rc != PAPI_OK) {
    handle_ = PAPI_NULL;
    return rc;
  }
  step = "PAPI_assign_eventset_component";
  if (const int rc = PAPI_assign_eventset_component(handle_, component); rc != PAPI_OK) {
    return rc;
  }
  PAPI_option_t option{};
  option.granularity.eventset = handle_;
  option.granularity.granularity = PAPI_GRN_SYS;
  step = "PAPI_set_opt(PAPI_GRANUL, PAPI_GRN_SYS)";
  return PAPI_set_opt(PAPI_GRANUL, &option);
}

int EventSet::attach_cpu(unsigned cpu) noexcept {
  PAPI_option_t option{};
  option.cpu.eventset = handle_;
  option.cpu.cpu_num = cpu;
  return PAPI_set_opt(PAPI_CPU_ATTACH, &option);
}

int EventSet::set_domain(CountingDomain domain) noexcept {
  PAPI_option_t option{};
  option.domain.eventset = handle_;
  switch (domain) {
    case CountingDomain::user: option.domain.domain = PAPI_DOM_USER; break;
    case CountingDomain::kernel: option.domain.domain = PAPI_DOM_KERNEL; break;
    case CountingDomain::all: option.domain.domain = PAPI_DOM_USER | PAPI_DOM_KERNEL; break;
  }
  return PAPI_set_opt(PAPI_DOMAIN, &option);
}

int EventSet::add(const std::string& name) noexcept {
  return PAPI_add_named_event(handle_, name.c_str());
}

int EventSet::multiplex() noexcept { return PAPI_set_multiplex(handle_); }

int EventSet::start() noexcept {
  const int rc = PAPI_start(handle_);
  running_ = rc == PAPI_OK;
  return rc;
}

void EventSet::reset() noexcept {
  if (handle_ == PAPI_NULL) return;
  if (running_) PAPI_stop(handle_, nullptr);  // the final counts are not wanted
  running_ = false;
  PAPI_cleanup_eventset(handle_);
  PAPI_destroy_eventset(&handle_);
  handle_ = PAPI_NULL;
}

}  // namespace hwperf::papi
