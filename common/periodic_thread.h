// A background thread that runs some work every period until its owner goes away: the rescans
// of the process and cgroup collectors. Declared as its owner's last member, it is destroyed
// first, so the work never runs on members already gone.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace hwperf {

class PeriodicThread {
 public:
  PeriodicThread(std::chrono::duration<double> period, std::function<void()> work);
  // Wakes the thread and waits for the work in progress, if any, to finish.
  ~PeriodicThread();
  PeriodicThread(const PeriodicThread&) = delete;
  PeriodicThread& operator=(const PeriodicThread&) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace hwperf
