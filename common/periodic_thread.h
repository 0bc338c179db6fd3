// A background thread that runs some work every period until its owner goes away: the rescans
// of the process and cgroup collectors. Declared as its owner's last member, it is destroyed
// first, so the work never runs on members already gone. Nothing the work throws ends the process:
// it is logged (again only when its message changes) and the work runs again at the next period,
// as a failed scrape is reported and the next one tried.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace hwperf {

class PeriodicThread {
 public:
  // `name` says whose work failed in the log ("cgroup: rescan").
  PeriodicThread(std::string name, std::chrono::duration<double> period,
                 std::function<void()> work);
  // Wakes the thread and waits for the work in progress, if any, to finish.
  ~PeriodicThread();
  PeriodicThread(const PeriodicThread&) = delete;
  PeriodicThread& operator=(const PeriodicThread&) = delete;

 private:
  void run_once(const std::function<void()>& work);

  std::string name_;
  std::string last_failure_;  // only the thread touches it
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace hwperf
