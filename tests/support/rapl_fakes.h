// Fakes the RAPL unit tests share: an energy source whose raw values the test sets, probe
// results, and a clock moved by hand.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "collectors/rapl/energy_source.h"
#include "collectors/rapl/rapl_engine.h"
#include "tests/support/rapl_fixtures.h"

namespace hwperf::test::rapl_fakes {

// The RAPL unit tests' prelude: `using namespace hwperf::test::rapl_fakes;` brings these too.
using namespace hwperf::rapl;
using hwperf::test::find_samples;
using hwperf::test::parse_exposition;
using hwperf::test::Sample;
using hwperf::test::scrape;
using hwperf::test::TempDir;
using hwperf::test::value_of;

constexpr std::uint64_t kTwoTo32 = 0x100000000ull;

// Raw values the test sets and the source returns; shared so the test keeps a handle on it after
// the engine owns the source.
struct FakeState {
  std::mutex mutex;
  std::vector<std::uint64_t> values;
  std::vector<int> errors;
  std::atomic<std::uint64_t> reads{0};

  void set(std::size_t i, std::uint64_t value) {
    const std::lock_guard<std::mutex> lock(mutex);
    values.at(i) = value;
    errors.at(i) = 0;
  }
  void fail(std::size_t i, int error) {
    const std::lock_guard<std::mutex> lock(mutex);
    errors.at(i) = error;
  }
};

class FakeEnergySource final : public EnergySource {
 public:
  FakeEnergySource(std::vector<CounterInfo> counters, std::shared_ptr<FakeState> state,
                   std::map<unsigned, double> hints = {})
      : counters_(std::move(counters)), state_(std::move(state)), hints_(std::move(hints)) {
    const std::lock_guard<std::mutex> lock(state_->mutex);
    state_->values.resize(counters_.size(), 0);
    state_->errors.resize(counters_.size(), 0);
  }
  RaplInterface interface() const override { return RaplInterface::msr; }
  const std::vector<CounterInfo>& counters() const override { return counters_; }
  OrErrno<std::uint64_t> read(std::size_t index) override {
    const std::lock_guard<std::mutex> lock(state_->mutex);
    ++state_->reads;
    if (state_->errors.at(index) != 0) return {0, state_->errors.at(index)};
    return {state_->values.at(index), 0};
  }
  std::map<unsigned, double> package_power_hints() const override { return hints_; }

 private:
  std::vector<CounterInfo> counters_;
  std::shared_ptr<FakeState> state_;
  std::map<unsigned, double> hints_;
};

inline CounterInfo msr_counter(Domain domain, std::optional<unsigned> package, unsigned esu,
                               std::optional<unsigned> die = std::nullopt) {
  CounterInfo info;
  info.domain = domain;
  info.package = package;
  info.die = die;
  info.scale = {WrapRule::modulo_2_32, 0, std::uint64_t{1} << esu};
  info.source = "fake " + std::string(to_string(domain));
  return info;
}

inline ProbeResult fake_probe(std::vector<CounterInfo> counters, std::shared_ptr<FakeState> state,
                              std::map<unsigned, double> hints = {}) {
  ProbeResult probe;
  probe.interface = RaplInterface::msr;
  probe.source =
      std::make_unique<FakeEnergySource>(std::move(counters), std::move(state), std::move(hints));
  return probe;
}

inline ProbeResult failed_probe(RaplInterface interface, const std::string& reason) {
  ProbeResult probe;
  probe.interface = interface;
  probe.reason = reason;
  probe.message = "rapl: " + std::string(to_string(interface)) + ": test failure";
  return probe;
}

// A clock the test moves by hand, for the plausibility check.
struct FakeClock {
  std::shared_ptr<std::atomic<std::int64_t>> ms =
      std::make_shared<std::atomic<std::int64_t>>(3600 * 1000);
  RaplEngine::NowFn fn() const {
    auto shared = ms;
    return [shared] { return Clock::time_point{} + std::chrono::milliseconds(shared->load()); };
  }
  void advance(std::chrono::milliseconds by) const { *ms += by.count(); }
};

inline Topology two_packages() { return hwperf::test::rapl_fixture::two_package_topology(); }

}  // namespace hwperf::test::rapl_fakes
