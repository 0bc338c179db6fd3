#include "tests/catch.hpp"

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

#include "common/periodic_thread.h"
#include "tests/support/support.h"

namespace hwperf {

// A rescan that throws (a cgroup folder gone mid-walk, memory refused) once ended the exporter:
// an exception out of a std::thread's function is std::terminate.
TEST_CASE("work that throws is logged once and run again at the next period", "[common]") {
  test::CapturedStderr log;
  std::atomic<int> runs{0};
  {
    PeriodicThread thread("test: work", std::chrono::milliseconds(5), [&runs] {
      const int run = ++runs;
      if (run <= 3) throw std::runtime_error("folder vanished");
      if (run == 4) throw 42;
    });
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (runs.load() < 6 && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  CHECK(runs.load() >= 6);
  const std::string text = log.text();
  INFO(text);
  const auto count = [&text](const std::string& what) {
    std::size_t found = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++found;
    return found;
  };
  CHECK(count("test: work failed: folder vanished") == 1);
  CHECK(count("test: work failed: an exception of unknown type") == 1);
}

}  // namespace hwperf
