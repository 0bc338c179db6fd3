// The counting layer (collectors/perf/counter_set.h) over a fake backend whose readings the test
// writes: totals per (count, slot), each interval scaled by its own running share, members
// closed with their counts kept or discarded, read errors, slots whose CPU went offline, partial
// opens and zeroed slots; and once over the kernel's perf_event_open, with a software event of
// the test's own thread.
#include "tests/catch.hpp"

#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "collectors/perf/counter_set.h"
#include "tests/support/counting_fakes.h"

using namespace hwperf;
using hwperf::test::FakeCounterBoard;
using hwperf::test::FakeCountingBackend;

namespace {

perf::EventEncoding fake_event(std::uint64_t config) {
  perf::EventEncoding event;
  event.name = "fake" + std::to_string(config);
  event.config = config;
  return event;
}

// Two units: a group of two events (configs 1 and 2) and an event alone (config 3).
std::shared_ptr<perf::CounterLayout> two_units(std::vector<int> cpus) {
  auto layout = std::make_shared<perf::CounterLayout>();
  layout->units = {{fake_event(1), fake_event(2)}, {fake_event(3)}};
  layout->cpus = std::move(cpus);
  return layout;
}

}  // namespace

TEST_CASE("A counter set adds each interval of each counter to its totals, per count and slot",
          "[counter_set]") {
  FakeCounterBoard board;
  const FakeCountingBackend backend(board);
  perf::CounterSet set(two_units({0, 1}), backend);
  const auto opening = set.open({perf::CountingTarget::every_task()});
  REQUIRE(opening.error == 0);
  CHECK(board.opened == 4);  // 2 units x 2 CPUs
  CHECK(set.descriptors() == 2 * 3);

  board.readings[{-1, 0, 1}] = {100, 100, {10, 20}};
  board.readings[{-1, 1, 1}] = {100, 100, {5, 6}};
  board.readings[{-1, 1, 3}] = {100, 100, {7}};
  auto totals = set.read();
  // [count * slots + slot]: counts 0 and 1 of the group, then count 2, the event alone.
  CHECK(totals.counts == std::vector<std::uint64_t>{10, 5, 20, 6, 0, 7});
  CHECK(totals.enabled_ns == std::vector<std::uint64_t>{100, 100, 0, 100});
  CHECK(totals.descriptors == 6);
  CHECK(totals.reads == 4);  // each unit on each CPU once

  // Half the interval on the counters: the interval's counts are doubled, not the lifetime's.
  board.readings[{-1, 0, 1}] = {300, 200, {60, 120}};
  totals = set.read();
  CHECK(totals.counts[0] == 10 + 50 * 2);
  CHECK(totals.counts[2] == 20 + 100 * 2);
  CHECK(totals.enabled_ns[0] == 300);
  CHECK(totals.running_ns[0] == 200);
  CHECK(totals.read_errors == 0);
}

TEST_CASE("A task counted on one CPU is never scaled; wherever it runs, it is", "[counter_set]") {
  FakeCounterBoard board;
  const FakeCountingBackend backend(board);
  perf::CounterSet bound(two_units({0}), backend);
  perf::CounterSet anywhere(two_units({-1}), backend);
  REQUIRE(bound.open({perf::CountingTarget::task(42, true, false)}).error == 0);
  REQUIRE(anywhere.open({perf::CountingTarget::task(42, true, false)}).error == 0);
  board.readings[{42, 0, 3}] = {100, 50, {8}};
  board.readings[{42, -1, 3}] = {100, 50, {8}};
  CHECK(bound.read().counts[2] == 8);
  CHECK(anywhere.read().counts[2] == 16);
}

TEST_CASE("A closed member's counts stay in the totals; a discarded one's last interval does not",
          "[counter_set]") {
  FakeCounterBoard board;
  const FakeCountingBackend backend(board);
  perf::CounterSet set(two_units({-1}), backend);
  const auto first = set.open({perf::CountingTarget::task(10, true, false)});
  const auto second = set.open({perf::CountingTarget::task(20, true, false)});
  REQUIRE(first.error == 0);
  REQUIRE(second.error == 0);
  board.readings[{10, -1, 3}] = {10, 10, {4}};
  board.readings[{20, -1, 3}] = {10, 10, {40}};
  CHECK(set.read().counts[2] == 44);

  // Counted since the last read, then closed: what it counted meanwhile is read once more.
  board.readings[{10, -1, 3}] = {20, 20, {5}};
  set.close(first.member);
  // A stranger's counts since the last read are not added.
  board.readings[{20, -1, 3}] = {20, 20, {1000}};
  set.discard(second.member);
  CHECK(board.live == 0);
  const auto totals = set.read();
  CHECK(totals.counts[2] == 45);
  CHECK(totals.descriptors == 0);
}

TEST_CASE("A failed read is counted, names its errno, and its interval comes with the next read",
          "[counter_set]") {
  FakeCounterBoard board;
  const FakeCountingBackend backend(board);
  perf::CounterSet set(two_units({0}), backend);
  REQUIRE(set.open({perf::CountingTarget::every_task()}).error == 0);
  board.readings[{-1, 0, 3}] = {10, 10, {1}};
  set.read();
  board.read_errors[{-1, 0, 3}] = EIO;
  board.readings[{-1, 0, 3}] = {20, 20, {3}};
  auto totals = set.read();
  CHECK(totals.read_errors == 1);
  CHECK(totals.errors == std::vector<int>{0, EIO});
  CHECK(totals.counts[2] == 1);
  board.read_errors.clear();
  totals = set.read();
  CHECK(totals.errors == std::vector<int>{0, 0});
  CHECK(totals.counts[2] == 3);
  CHECK(totals.read_errors == 1);
}

TEST_CASE("Opening whole: a failure keeps nothing, a task that ended is skipped", "[counter_set]") {
  FakeCounterBoard board;
  const FakeCountingBackend backend(board);
  perf::CounterSet set(two_units({0, 1}), backend);
  board.open_errors[{7, 1, 3}] = EACCES;
  const auto refused = set.open({perf::CountingTarget::task(7, true, false)});
  CHECK(refused.error == EACCES);
  CHECK(board.live == 0);

  board.open_errors[{8, 0, 1}] = ESRCH;
  const auto some = set.open(
      {perf::CountingTarget::task(8, true, false), perf::CountingTarget::task(9, true, false)});
  CHECK(some.error == 0);
  CHECK(set.descriptors() == 2 * 3);  // thread 9's counters only
  const auto none = set.open({perf::CountingTarget::task(8, true, false)});
  CHECK(none.error == ESRCH);
}

TEST_CASE("Opening partially: what opens counts, what does not is said per unit and slot",
          "[counter_set]") {
  FakeCounterBoard board;
  const FakeCountingBackend backend(board);
  perf::CounterSet set(two_units({0, 1}), backend);
  board.open_errors[{-1, 1, 3}] = ENOENT;
  const auto opening = set.open({perf::CountingTarget::every_task()}, {}, true);
  REQUIRE(opening.error == 0);
  CHECK(opening.refused == std::vector<int>{0, 0, 0, ENOENT});
  board.readings[{-1, 0, 3}] = {1, 1, {9}};
  CHECK(set.read().counts[4] == 9);
}

TEST_CASE("A slot whose CPU is offline stays closed, keeps its totals, and counts on once reopened",
          "[counter_set]") {
  FakeCounterBoard board;
  const FakeCountingBackend backend(board);
  auto layout = two_units({0, 1});
  layout->cpus_come_and_go = true;
  perf::CounterSet set(layout, backend);
  const auto target = perf::CountingTarget::task(5, false, false);
  // CPU 1 known offline when the target is opened, CPU 0 going offline during the open.
  board.open_errors[{5, 0, 3}] = ENODEV;
  const auto opening = set.open({target}, {true, false});
  REQUIRE(opening.error == 0);
  CHECK(board.opened == 1);  // unit 0 on CPU 0 only
  board.readings[{5, 0, 1}] = {10, 10, {6, 1}};
  CHECK(set.read().counts[0] == 6);

  // Both back: new descriptors count from their own zero, the totals go on from 6.
  board.open_errors.clear();
  CHECK(set.reopen(opening.member, target, {0, 1}).error == 0);
  CHECK(board.opened == 1 + 4);
  board.readings[{5, 0, 1}] = {4, 4, {2, 1}};
  board.readings[{5, 1, 3}] = {10, 10, {7}};
  const auto totals = set.read();
  CHECK(totals.counts[0] == 8);
  CHECK(totals.counts[5] == 7);
  CHECK(board.live == 4);  // the old descriptor of unit 0 on CPU 0 is closed

  // Not a layout that follows CPUs: ENODEV is a failure like any other.
  perf::CounterSet strict(two_units({0, 1}), backend);
  board.open_errors[{-1, 0, 1}] = ENODEV;
  CHECK(strict.open({perf::CountingTarget::every_task()}).error == ENODEV);
}

TEST_CASE("Zeroing a slot starts its totals again; the other slots keep theirs", "[counter_set]") {
  FakeCounterBoard board;
  const FakeCountingBackend backend(board);
  perf::CounterSet set(two_units({0, 1}), backend);
  REQUIRE(set.open({perf::CountingTarget::every_task()}).error == 0);
  board.readings[{-1, 0, 1}] = {10, 10, {1, 2}};
  board.readings[{-1, 1, 1}] = {10, 10, {3, 4}};
  set.read();
  set.zero(0);
  board.readings[{-1, 0, 1}] = {15, 15, {2, 2}};
  const auto totals = set.read();
  CHECK(totals.counts == std::vector<std::uint64_t>{1, 3, 0, 4, 0, 0});
  CHECK(totals.enabled_ns == std::vector<std::uint64_t>{5, 10, 0, 0});
}

TEST_CASE("Over perf_event_open, a counter set counts its own thread's task clock",
          "[counter_set][perf][kernel_perf]") {
  auto layout = std::make_shared<perf::CounterLayout>();
  perf::EventEncoding clock;
  clock.name = "task-clock";
  clock.type = PERF_TYPE_SOFTWARE;
  clock.config = PERF_COUNT_SW_TASK_CLOCK;
  layout->units = {{clock}};
  layout->cpus = {-1};
  perf::CounterSet set(layout);
  const auto tid = static_cast<pid_t>(::syscall(SYS_gettid));
  const auto opening = set.open({perf::CountingTarget::task(tid, false, false)});
  REQUIRE(opening.error == 0);
  volatile std::uint64_t spin = 0;
  for (std::uint64_t i = 0; i < 20000000; ++i) spin = spin + i;
  const auto first = set.read();
  CHECK(first.descriptors == 1);
  CHECK(first.counts[0] > 0);
  CHECK(first.enabled_ns[0] > 0);
  set.close(opening.member);
  const auto closed = set.read();
  CHECK(closed.counts[0] >= first.counts[0]);
  CHECK(closed.descriptors == 0);
}
