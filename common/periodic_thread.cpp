#include "common/periodic_thread.h"

#include <utility>

namespace hwperf {

PeriodicThread::PeriodicThread(std::chrono::duration<double> period, std::function<void()> work)
    : thread_([this, period, work = std::move(work)] {
        std::unique_lock lock(mutex_);
        while (!wake_.wait_for(lock, period, [this] { return stopping_; })) {
          lock.unlock();
          work();
          lock.lock();
        }
      }) {}

PeriodicThread::~PeriodicThread() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

}  // namespace hwperf
