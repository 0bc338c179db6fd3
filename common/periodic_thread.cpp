#include "common/periodic_thread.h"

#include <exception>
#include <utility>

#include "common/log.h"

namespace hwperf {

PeriodicThread::PeriodicThread(std::string name, std::chrono::duration<double> period,
                               std::function<void()> work)
    : name_(std::move(name)), thread_([this, period, work = std::move(work)] {
        std::unique_lock lock(mutex_);
        while (!wake_.wait_for(lock, period, [this] { return stopping_; })) {
          lock.unlock();
          run_once(work);
          lock.lock();
        }
      }) {}

void PeriodicThread::run_once(const std::function<void()>& work) {
  std::string failure;
  try {
    work();
  } catch (const std::exception& e) {
    failure = e.what();
  } catch (...) {
    failure = "an exception of unknown type";
  }
  if (!failure.empty() && failure != last_failure_) {
    log::warn(name_ + " failed: " + failure + "; tried again every period (logged again when " +
              "the reason changes)");
  } else if (failure.empty() && !last_failure_.empty()) {
    log::info(name_ + " succeeds again");
  }
  last_failure_ = std::move(failure);
}

PeriodicThread::~PeriodicThread() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

}  // namespace hwperf
