// The marker library across processes (issue 35, item 2): the exporter's segment is inherited
// through every exec (a wrapper's, or a marked program's that executes another), processes that
// share it append to it without losing a name or a slot, and a segment the library makes itself
// stays its own process's. The wrappers under the exporter are in test_regions_e2e.cpp.
#include "tests/catch.hpp"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/markers_live_support.h"
#include "tests/support/support.h"

using namespace hwperf;
using namespace hwperf::test::markers_live;

TEST_CASE("A marked program that executes another keeps counting into the exporter's segment",
          "[markers][live]") {
  // marker_program marks "before", then executes the cache lab, which marks "init" and "kernel"
  // in the same process: the library had made the descriptor close-on-exec when it attached.
  Segment segment({task_clock, page_faults});
  Program program({"exec", HWPERF_TEST_CACHE_LAB, "papi", "300"}, {segment.environment()},
                  segment.fd());
  const auto lines = program.lines();
  const pid_t pid = program.pid();
  REQUIRE(program.finish() == 0);
  INFO(program.stderr_text());
  const auto slots = read_slots(segment.base());
  CHECK(total(slots, "before").calls == 1);
  for (const std::string region : {"init", "kernel"}) {
    CAPTURE(region);
    const Slot counted = total(slots, region);
    CHECK(counted.calls == 1);
    CHECK(counted.counts.at(1) == lab_faults(lines, region));
  }
  CHECK(segment.header()->writer_pid == static_cast<std::uint32_t>(pid));
  CHECK(program.stderr_text().empty());
}

TEST_CASE("Processes sharing the exporter's segment append to it at once and lose nothing",
          "[markers][live]") {
  // What mpirun or `sh -c 'a & b'` do: processes of one command write one segment. Two of them,
  // released at the same instant, each append 120 names of their own and a slot for each: the
  // library's lock on appending must hold across processes, or both take the same index. A race
  // shows in some rounds only, so the test runs several.
  const int names = 120;
  for (int round = 0; round < 30; ++round) {
    CAPTURE(round);
    Segment segment({task_clock});
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    const std::uint64_t start = static_cast<std::uint64_t>(now.tv_sec) * 1000000000u +
                                static_cast<std::uint64_t>(now.tv_nsec) +
                                20000000u * static_cast<std::uint64_t>(HWPERF_SLOWDOWN);
    const std::vector<std::string> args{"race", std::to_string(names), std::to_string(start), "0"};
    Program first(args, {segment.environment()}, segment.fd());
    Program second(args, {segment.environment()}, segment.fd());
    std::set<std::string> expected;
    for (const pid_t pid : {first.pid(), second.pid()}) {
      for (int i = 0; i < names; ++i)
        expected.insert(std::to_string(pid) + "." + std::to_string(i));
    }
    for (Program* program : {&first, &second}) {
      program->lines();  // "ready": released
      CHECK(numbers(program->lines(), "raced").size() == 1);
    }
    REQUIRE(first.finish() == 0);
    REQUIRE(second.finish() == 0);
    const auto table = region_names(segment.base());
    CHECK(table.size() == expected.size());
    CHECK(std::set<std::string>(table.begin(), table.end()) == expected);
    const auto slots = read_slots(segment.base());
    CHECK(slots.size() == expected.size());
    std::set<std::string> counted;
    for (const auto& slot : slots) {
      if (slot.calls == 1 && slot.region.rfind(std::to_string(slot.tid) + ".", 0) == 0) {
        counted.insert(slot.region);
      }
    }
    CHECK(counted == expected);
    CHECK(segment.header()->dropped == 0);
  }
}

TEST_CASE("A process appending to a shared segment waits while another holds the append lock",
          "[markers][live]") {
  // The writers' lock (markers/include/hwperf/region_segment.h): a POSIX write lock on the
  // segment's first byte, held here by the test as another process would hold it.
  Segment segment({task_clock});
  flock lock{};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  lock.l_len = 1;
  REQUIRE(fcntl(segment.fd(), F_SETLK, &lock) == 0);
  Program program({"race", "1", "0", "0"}, {segment.environment()}, segment.fd());
  CHECK(program.lines().empty());  // "ready": about to register its region
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(__atomic_load_n(&segment.header()->region_count, __ATOMIC_ACQUIRE) == 0);
  lock.l_type = F_UNLCK;
  REQUIRE(fcntl(segment.fd(), F_SETLK, &lock) == 0);
  CHECK(numbers(program.lines(), "raced") == std::vector<std::uint64_t>{1});
  REQUIRE(program.finish() == 0);
  CHECK(region_names(segment.base()).size() == 1);
  CHECK(read_slots(segment.base()).size() == 1);
}

TEST_CASE("A segment the library makes for itself is never inherited by what it executes",
          "[markers][live]") {
  // HWPERF_REGIONS_EVENTS: the program's own segment, found by the exporter under its
  // /proc/PID/fd. What it executes (here env, preloaded, making a segment of its own, then ls
  // without the library) must not hold it: the exporter would take it for that process's.
  Program program({"exec", "/usr/bin/env", "-u", "LD_PRELOAD", "-u", HWPERF_REGION_EVENTS_ENV,
                   "/bin/ls", "-l", "/proc/self/fd/"},
                  {std::string(HWPERF_REGION_EVENTS_ENV) + "=task-clock"});
  const auto lines = program.lines();
  REQUIRE(program.finish() == 0);
  std::string listing;
  for (const auto& line : lines) listing += line + "\n";
  INFO(listing);
  CHECK(listing.find(" -> ") != std::string::npos);  // ls listed the descriptors it holds
  CHECK(listing.find(HWPERF_REGION_MEMFD_NAME) == std::string::npos);
}
