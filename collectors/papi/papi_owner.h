// Threads that own PAPI event sets, because PAPI ties sets to threads (papi_source.cpp explains
// why every qualifier set needs one). Work reaches an owner at startup (building and starting its
// sets) and when a scrape restarts a set that failed to read (PAPI_stop and PAPI_start run on the
// set's own thread, as papi_source.cpp explains); reading needs no owner.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "collectors/papi/papi_event_set.h"

namespace hwperf::papi {

// A thread that owns event sets for PAPI's sake (see the top of this file). Work reaches it only
// through run(), at startup or to restart a set; once told to stop it tears its sets down itself,
// newest first.
class OwnerThread {
 public:
  OwnerThread() : thread_([this] { loop(); }) {}
  ~OwnerThread() {
    request_stop();
    thread_.join();
  }
  OwnerThread(const OwnerThread&) = delete;
  OwnerThread& operator=(const OwnerThread&) = delete;

  // Tells the thread to tear its sets down and end, without waiting for it (the destructor
  // waits). Lets many owners tear down at once: see Owners.
  void request_stop() noexcept {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
  }

  // Runs fn on the owner thread and returns its result (or rethrows its exception).
  template <typename F>
  auto run(F fn) -> decltype(fn()) {
    std::packaged_task<decltype(fn())()> task(std::move(fn));
    auto result = task.get_future();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      tasks_.emplace_back([&task] { task(); });
    }
    wake_.notify_all();
    return result.get();
  }

  // Only to be used inside run().
  std::vector<EventSet>& sets() { return sets_; }
  int registration() const { return registration_; }

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_;  // guarded by mutex_
  bool stopping_ = false;                    // guarded by mutex_
  std::vector<EventSet> sets_;               // touched only on the owner thread
  int registration_ = 0;  // PAPI_register_thread()'s result (PAPI_OK is 0); set before any task
  std::thread thread_;    // last: starts once the members above exist
};

// All the owner threads of a source. A large machine has hundreds of qualifier sets, each with its
// own owner; stopping and joining them one at a time would add up every teardown (PAPI_stop,
// closing the perf_event descriptors, PAPI_unregister_thread) and delay a SIGTERM exit by
// seconds. So every owner is told to stop first, then all are joined: they tear down in parallel,
// each on its own thread as PAPI requires.
class Owners {
 public:
  Owners() = default;
  Owners(const Owners&) = delete;
  Owners& operator=(const Owners&) = delete;
  ~Owners() { clear(); }

  OwnerThread& add(std::unique_ptr<OwnerThread> owner) {
    list_.push_back(std::move(owner));
    return *list_.back();
  }

  // Stops and joins one owner (one whose sets all failed).
  void remove(const OwnerThread* owner) {
    list_.erase(std::find_if(list_.begin(), list_.end(),
                             [owner](const auto& entry) { return entry.get() == owner; }));
  }

  void clear() noexcept {
    for (const auto& owner : list_) owner->request_stop();
    list_.clear();  // each destructor joins an owner that is already tearing down
  }

 private:
  std::vector<std::unique_ptr<OwnerThread>> list_;
};

}  // namespace hwperf::papi
