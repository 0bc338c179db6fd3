// What a measured program can do to the exporter through its region segment (issue 36): hold
// every slot's seqlock while its threads keep the CPUs busy, fill the slots with made-up threads,
// push sums past 2^64, flip the segment between valid and scribbled at every read. The segment is
// the command's (-- CMD), written by the fake writer over the memfd the test created.
#include "tests/catch.hpp"

#include <atomic>
#include <chrono>
#include <limits>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "collectors/papi/papi_presets.h"
#include "collectors/process/process_collector.h"
#include "common/region_segment_file.h"
#include "tests/support/region_collector_config.h"
#include "tests/support/region_segment_fake.h"
#include "tests/support/support.h"

using namespace hwperf;

namespace {

// The collector for a command whose segment has room for `slots`, and a writer over it.
struct CommandSegment {
  explicit CommandSegment(std::uint32_t slots, std::uint32_t regions = 1)
      : fd(create_region_segment(regions, slots)),
        collector(process::make_process_collector(
            test::region_config(test::command_target(fd.get()), false, false),
            test::two_socket_topology(), papi::preset_catalog())),
        writer(fd.get(), region_segment_layout(regions, slots).size) {}
  UniqueFd fd;
  std::unique_ptr<process::ProcessCollector> collector;
  test::FakeRegionWriter writer;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::size_t lines_with(const std::string& text, const std::string& part) {
  std::size_t lines = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) {
    ++lines;
  }
  return lines;
}

}  // namespace

TEST_CASE("A segment held odd by a busy program costs each scrape a bounded read",
          "[region][process][kernel_perf]") {
  CommandSegment command(HWPERF_REGION_MAX_SLOTS);
  command.writer.add_region("r");
  test::fill_odd_slots(command.writer, HWPERF_REGION_MAX_SLOTS);
  const region::ReadLimits limits;
  const std::size_t torn_per_read = limits.failed_tries / limits.tries_per_slot;
  constexpr int kScrapes = 3;
  std::vector<test::Sample> samples;
  {
    test::BusyCpus busy(10.0 * HWPERF_SLOWDOWN);
    for (int i = 0; i < kScrapes; ++i) {
      const auto start = std::chrono::steady_clock::now();
      samples = test::scrape(*command.collector);
      const double seconds = seconds_since(start);
      INFO("scrape " << i);
      CHECK(seconds < 0.5 * HWPERF_SLOWDOWN);
    }
  }
  const std::map<std::string, std::string> labels = {{"target", "app"}, {"pid", "0"}};
  auto skipped = [&](const char* why) {
    auto with = labels;
    with["why"] = why;
    return test::value_of(samples, "hwperf_region_slot_reads_skipped_total", with);
  };
  CHECK(skipped("torn") == static_cast<double>(kScrapes * torn_per_read));
  CHECK(skipped("budget") ==
        static_cast<double>(kScrapes * (HWPERF_REGION_MAX_SLOTS - torn_per_read)));
  CHECK(test::value_of(samples, "hwperf_region_segment_valid", labels) == 1);
}

TEST_CASE("Region sums saturate at 2^64 - 1 instead of wrapping",
          "[region][process][kernel_perf]") {
  CommandSegment command(4);
  auto& writer = command.writer;
  const auto region = writer.add_region("r");
  const auto a = writer.add_slot(region, 1, 0);
  const auto b = writer.add_slot(region, 2, 0);
  constexpr std::uint64_t half = std::uint64_t{1} << 63;
  // What the series must be: the exact sum, or 2^64 - 1 past it.
  auto expected = [](std::uint64_t x, std::uint64_t y) {
    const unsigned __int128 exact = static_cast<unsigned __int128>(x) + y;
    const unsigned __int128 max = std::numeric_limits<std::uint64_t>::max();
    return static_cast<double>(static_cast<std::uint64_t>(exact < max ? exact : max));
  };
  const std::map<std::string, std::string> labels = {{"target", "app"}, {"region", "r"}};
  const std::string faults = test::region_family(test::kEvents[1]);
  double calls_before = 0, faults_before = 0;
  for (const std::uint64_t step : {half / 2, half - 1000, half, half + 999}) {
    writer.set(a, step, step, {step, step});
    writer.set(b, step, step, {step, step});
    const auto samples = test::scrape(*command.collector);
    INFO("each slot at " << step);
    const double calls = test::value_of(samples, "hwperf_region_calls_total", labels);
    const double counted = test::value_of(samples, faults, labels);
    CHECK(calls == expected(step, step));
    CHECK(counted == expected(step, step));
    CHECK(test::value_of(samples, "hwperf_region_seconds_total", labels) ==
          Approx(expected(step, step) / 1e9));
    CHECK(calls >= calls_before);
    CHECK(counted >= faults_before);
    calls_before = calls;
    faults_before = counted;
  }
}

TEST_CASE("Per-thread region series stop at a bound, the rest summed as tid other",
          "[region][process][kernel_perf]") {
  CommandSegment command(HWPERF_REGION_MAX_SLOTS, 2);
  auto& writer = command.writer;
  // A program's worth of made-up threads: every slot a thread of its own, names of 63 bytes.
  const auto region = writer.add_region(std::string(63, 'r'));
  std::uint64_t all_calls = 0, folded_calls = 0;
  for (std::uint32_t s = 0; s < HWPERF_REGION_MAX_SLOTS; ++s) {
    writer.set(writer.add_slot(region, static_cast<std::int32_t>(1000 + s), 0), s + 1, 1, {1, 1});
    all_calls += s + 1;
    if (s >= region::kMaxThreadPairs) folded_calls += s + 1;
  }
  const auto samples = test::scrape(*command.collector);
  const auto threads = test::find_samples(samples, "hwperf_region_thread_calls_total");
  CHECK(threads.size() == region::kMaxThreadPairs + 1);
  CHECK(test::sum_of(threads) == static_cast<double>(all_calls));
  CHECK(test::value_of(samples, "hwperf_region_thread_calls_total", {{"tid", "other"}}) ==
        static_cast<double>(folded_calls));
  CHECK(test::value_of(samples, "hwperf_region_thread_slots_folded", {{"target", "app"}}) ==
        static_cast<double>(HWPERF_REGION_MAX_SLOTS - region::kMaxThreadPairs));
  // The region's own series has every slot; the first threads keep their own series.
  CHECK(test::value_of(samples, "hwperf_region_calls_total", {{"target", "app"}}) ==
        static_cast<double>(all_calls));
  CHECK(test::value_of(samples, "hwperf_region_thread_calls_total", {{"tid", "1000"}}) == 1);
}

TEST_CASE("A segment whose problem changes at every read is logged a few times a minute",
          "[region][process][kernel_perf]") {
  CommandSegment command(4);
  auto& writer = command.writer;
  writer.set(writer.add_slot(writer.add_region("r"), 1, 0), 1, 1, {1, 1});
  const auto magic = writer.header().magic;
  const std::map<std::string, std::string> labels = {{"target", "app"}, {"pid", "0"}};
  const test::CapturedStderr log;
  SECTION("scribbled differently at every read: one line") {
    for (std::uint64_t i = 1; i <= 10; ++i) {
      writer.header().magic = i;
      const auto samples = test::scrape(*command.collector);
      CHECK(test::value_of(samples, "hwperf_region_segment_valid", labels) == 0);
    }
    CHECK(lines_with(log.text(), "region segment") == 1);
  }
  SECTION("valid and scribbled in turn: at most the burst, the metric always current") {
    for (std::uint64_t i = 1; i <= 20; ++i) {
      const bool valid = i % 2 == 0;
      writer.header().magic = valid ? magic : i;
      const auto samples = test::scrape(*command.collector);
      auto with = labels;
      with["reason"] = valid ? "none" : "bad_magic";
      CHECK(test::value_of(samples, "hwperf_region_segment_valid", with) == (valid ? 1 : 0));
    }
    const std::string text = log.text();
    INFO(text);
    CHECK(lines_with(text, "region segment") == region::kProblemLogBurst);
  }
}

TEST_CASE("Overlapping scrapes of a segment being written never see a region go backwards",
          "[region][process][concurrency][kernel_perf]") {
  // Each segment is read by one scrape at a time, without a lock, the others sharing its
  // result: a read older than the last one merged must never be merged after it (which would
  // show as counts going backwards, refused and counted).
  CommandSegment command(8);
  auto& writer = command.writer;
  const auto slot = writer.add_slot(writer.add_region("r"), 1, 0);
  std::atomic<bool> stop{false};
  std::thread program([&] {
    for (std::uint64_t value = 1; !stop.load(std::memory_order_relaxed); ++value) {
      writer.set(slot, value, value, {value, value});
    }
  });
  const std::map<std::string, std::string> labels = {{"target", "app"}, {"region", "r"}};
  std::atomic<int> backwards{0};
  std::vector<std::thread> scrapers;
  for (int t = 0; t < 4; ++t) {
    scrapers.emplace_back([&] {
      double last = 0;
      for (int i = 0; i < 25; ++i) {
        const auto samples = test::scrape(*command.collector);
        const auto calls = test::find_samples(samples, "hwperf_region_calls_total", labels);
        const double now = calls.empty() ? 0 : calls[0].value;
        if (now < last) ++backwards;
        last = now;
      }
    });
  }
  for (auto& scraper : scrapers) scraper.join();
  stop = true;
  program.join();
  const auto samples = test::scrape(*command.collector);
  CHECK(backwards == 0);
  CHECK(test::value_of(samples, "hwperf_region_slot_reads_skipped_total",
                       {{"target", "app"}, {"why", "backwards"}}) == 0);
  CHECK(test::value_of(samples, "hwperf_region_calls_total", labels) > 0);
}
