// The rules that spread one CPU's events over PAPI event sets, against a fake set builder: which
// set is attached, the fallback to qualifiers, splitting when counters run out, and drops.
#include <algorithm>
#include "tests/catch.hpp"
#include <set>
#include <string>
#include <vector>

#include "collectors/papi/papi_placement.h"

using namespace hwperf;
using namespace hwperf::papi;

namespace {

constexpr unsigned kCpu = 7;  // the CPU being placed; a builder works for one CPU

// A PMU with `capacity` counters per event set; attach works unless told otherwise; events in
// `refused` never open (as an event unsupported on this CPU would).
struct FakeBuilder {
  std::size_t capacity = 2;
  bool attach_works = true;
  std::set<std::size_t> refused;
  std::set<std::size_t> too_big;  // need more counters than a set has
  struct Built {
    Binding binding;
    std::vector<std::size_t> events;
  };
  std::vector<Built> sets;  // the sets that started
  std::vector<Binding> attempts;

  SetOutcome operator()(Binding binding, const std::vector<std::size_t>& pending) {
    attempts.push_back(binding);
    SetOutcome outcome;
    if (binding == Binding::cpu_attach && !attach_works) {
      outcome.setup_failed = true;
      outcome.attach_unsupported = true;
      outcome.setup_reason = "Event does not exist";
      outcome.setup_remedy = "no PMU";
      return outcome;
    }
    for (std::size_t event : pending) {
      if (refused.count(event) != 0) {
        outcome.dropped.push_back(
            {event, kCpu, "Permission level does not permit operation", "sysctl"});
      } else if (too_big.count(event) != 0 || outcome.placed.size() == capacity) {
        outcome.overflow.push_back(event);
      } else {
        outcome.placed.push_back(event);
      }
    }
    if (!outcome.placed.empty()) sets.push_back({binding, outcome.placed});
    return outcome;
  }
};

Placement place(FakeBuilder& fake, std::vector<std::size_t> events, PapiAttachMode mode) {
  return place_events(
      kCpu, events, mode, [&](Binding b, const auto& p) { return fake(b, p); },
      "Event exists, but cannot be counted due to counter resource limitations",
      "count fewer events");
}

std::vector<std::size_t> all_placed(const FakeBuilder& fake) {
  std::vector<std::size_t> out;
  for (const auto& set : fake.sets) out.insert(out.end(), set.events.begin(), set.events.end());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("events beyond the counters are split into further qualifier sets", "[papi]") {
  FakeBuilder fake;
  fake.capacity = 2;
  const std::vector<std::size_t> events = {0, 1, 2, 3, 4};
  const auto placement = place(fake, events, PapiAttachMode::automatic);
  CHECK(placement.dropped.empty());
  CHECK_FALSE(placement.attach_fell_back);
  CHECK(all_placed(fake) == events);
  REQUIRE(fake.sets.size() == (events.size() + fake.capacity - 1) / fake.capacity);
  // Only the first set is attached: PAPI runs one attached set per CPU.
  CHECK(fake.sets[0].binding == Binding::cpu_attach);
  for (std::size_t i = 1; i < fake.sets.size(); ++i)
    CHECK(fake.sets[i].binding == Binding::qualifier);
  for (const auto& set : fake.sets) CHECK(set.events.size() <= fake.capacity);
}

TEST_CASE("auto falls back to qualifiers where a CPU cannot attach", "[papi]") {
  FakeBuilder fake;
  fake.attach_works = false;
  fake.capacity = 8;
  const std::vector<std::size_t> events = {0, 1, 2};
  const auto placement = place(fake, events, PapiAttachMode::automatic);
  CHECK(placement.attach_fell_back);
  CHECK(placement.fallback_reason == "Event does not exist");
  CHECK(placement.dropped.empty());
  REQUIRE(fake.sets.size() == 1);
  CHECK(fake.sets[0].binding == Binding::qualifier);
  CHECK(all_placed(fake) == events);
}

TEST_CASE("cpu_attach mode does not fall back: the CPU's events are dropped with the reason",
          "[papi]") {
  FakeBuilder fake;
  fake.attach_works = false;
  const std::vector<std::size_t> events = {0, 1, 2};
  const auto placement = place(fake, events, PapiAttachMode::cpu_attach);
  CHECK_FALSE(placement.attach_fell_back);
  CHECK(fake.sets.empty());
  CHECK(fake.attempts == std::vector<Binding>{Binding::cpu_attach});
  REQUIRE(placement.dropped.size() == events.size());
  for (const auto& drop : placement.dropped) {
    CHECK(drop.cpu == kCpu);
    CHECK(drop.reason == "Event does not exist");
  }
}

TEST_CASE("qualifier mode never attaches", "[papi]") {
  FakeBuilder fake;
  fake.capacity = 1;
  const auto placement = place(fake, {0, 1}, PapiAttachMode::qualifier);
  CHECK(placement.dropped.empty());
  for (Binding binding : fake.attempts) CHECK(binding == Binding::qualifier);
  CHECK(fake.sets.size() == 2);
}

TEST_CASE("an event that fits no set is dropped once, and the rest still count", "[papi]") {
  FakeBuilder fake;
  fake.capacity = 2;
  fake.too_big = {1};
  fake.refused = {3};
  const auto placement = place(fake, {0, 1, 2, 3, 4}, PapiAttachMode::automatic);
  CHECK(all_placed(fake) == std::vector<std::size_t>{0, 2, 4});
  REQUIRE(placement.dropped.size() == 2);
  std::set<std::size_t> dropped;
  for (const auto& drop : placement.dropped) {
    dropped.insert(drop.event);
    CHECK(drop.cpu == kCpu);
    CHECK_FALSE(drop.reason.empty());
  }
  CHECK(dropped == std::set<std::size_t>{1, 3});
}
