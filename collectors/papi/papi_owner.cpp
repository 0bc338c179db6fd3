#include "collectors/papi/papi_owner.h"

#include <papi.h>

namespace hwperf::papi {

static_assert(PAPI_OK == 0, "OwnerThread's registration starts as PAPI_OK");

void OwnerThread::loop() {
  registration_ = PAPI_register_thread();
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) break;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
  while (!sets_.empty()) sets_.pop_back();  // EventSet::reset: stop, clean up, destroy
  if (registration_ == PAPI_OK) PAPI_unregister_thread();
}

}  // namespace hwperf::papi
