// Region segments exported by the process collector: a segment the exporter created for a
// command (its fd in the target's configuration) and one found under /proc in a process the
// target counts, written by the fake writer; a scribbled segment leaves the collector serving,
// the reason exported. Also how segments are opened: sealed memfds only.
#include "tests/catch.hpp"

#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "collectors/events/vocabulary.h"
#include "collectors/papi/papi_presets.h"
#include "collectors/process/process_collector.h"
#include "collectors/region/segment_source.h"
#include "common/region_segment_file.h"
#include "tests/support/region_collector_config.h"
#include "tests/support/region_segment_fake.h"
#include "tests/support/support.h"
#include "topology/topology.h"

using namespace hwperf;
using hwperf::test::command_target;
using hwperf::test::FakeRegionWriter;
using hwperf::test::kEvents;
using hwperf::test::region_config;
using hwperf::test::region_family;

namespace {

struct Written {
  std::string region;
  std::int32_t tid, cpu;
  std::uint64_t calls, time_ns;
  std::vector<std::uint64_t> counts;  // per kEvents
};

// What each region's series must be: the sums over its slots (per CPU when `per_cpu`).
struct Expected {
  std::uint64_t calls = 0, time_ns = 0;
  std::vector<std::uint64_t> counts = std::vector<std::uint64_t>(std::size(kEvents));
};
std::map<std::pair<std::string, int>, Expected> sums(const std::vector<Written>& written,
                                                     bool per_cpu) {
  std::map<std::pair<std::string, int>, Expected> out;
  for (const auto& slot : written) {
    Expected& sum = out[{slot.region, per_cpu ? slot.cpu : -1}];
    sum.calls += slot.calls;
    sum.time_ns += slot.time_ns;
    for (std::size_t e = 0; e < slot.counts.size(); ++e) sum.counts[e] += slot.counts[e];
  }
  return out;
}

void write_all(FakeRegionWriter& writer, const std::vector<Written>& written) {
  std::map<std::string, std::uint32_t> regions;
  for (const auto& slot : written) {
    auto [it, added] = regions.try_emplace(slot.region, 0);
    if (added) it->second = writer.add_region(slot.region);
    writer.set(writer.add_slot(it->second, slot.tid, slot.cpu), slot.calls, slot.time_ns,
               slot.counts);
  }
}

void check_regions(const std::vector<test::Sample>& samples, const std::vector<Written>& written,
                   bool per_cpu) {
  for (const auto& [key, sum] : sums(written, per_cpu)) {
    std::map<std::string, std::string> labels = {{"target", "app"}, {"region", key.first}};
    if (per_cpu) labels["cpu"] = std::to_string(key.second);
    INFO("region " << key.first << " cpu " << key.second);
    CHECK(test::value_of(samples, "hwperf_region_calls_total", labels) ==
          static_cast<double>(sum.calls));
    CHECK(test::value_of(samples, "hwperf_region_seconds_total", labels) ==
          Approx(static_cast<double>(sum.time_ns) / 1e9));
    // task-clock counts nanoseconds, exported in seconds as the process families do.
    CHECK(test::value_of(samples, region_family(kEvents[0]), labels) ==
          Approx(static_cast<double>(sum.counts[0]) / 1e9));
    CHECK(test::value_of(samples, region_family(kEvents[1]), labels) ==
          static_cast<double>(sum.counts[1]));
  }
}

}  // namespace

TEST_CASE("The segment the exporter created for a command is exported, and survives scribbles",
          "[region][process][kernel_perf]") {
  const auto layout = region_segment_layout(8, 16);
  UniqueFd fd = create_region_segment(8, 16);
  const Topology topology = test::two_socket_topology();
  const bool per_cpu = GENERATE(false, true);
  auto collector = process::make_process_collector(
      region_config(command_target(fd.get()), false, per_cpu), topology, papi::preset_catalog());
  FakeRegionWriter writer(fd.get(), layout.size);
  // The collector wrote the event table the library will count, and READY.
  REQUIRE(writer.header().state == HWPERF_REGION_STATE_READY);
  REQUIRE(writer.header().event_count == std::size(kEvents));
  const std::vector<Written> written = {{"compute", 10, 1, 3, 3000000, {2900000, 12}},
                                        {"compute", 11, 5, 4, 5000000, {4800000, 30}},
                                        {"compute", 10, 5, 1, 1000000, {900000, 2}},
                                        {"sleep", 10, 1, 2, 600000000, {50000, 1}}};
  write_all(writer, written);
  auto samples = test::scrape(*collector);
  check_regions(samples, written, per_cpu);
  CHECK(test::value_of(samples, "hwperf_region_segment_valid",
                       {{"target", "app"}, {"reason", "none"}}) == 1);
  if (per_cpu) {
    // Each series carries its CPU's topology labels; CPU 5 is core 0 of package 1 there.
    const auto five = test::find_samples(samples, "hwperf_region_calls_total",
                                         {{"region", "compute"}, {"cpu", "5"}});
    REQUIRE(five.size() == 1);
    const HardwareThread* thread = nullptr;
    for (const auto& candidate : topology.threads()) {
      if (candidate.cpu == 5) thread = &candidate;
    }
    REQUIRE(thread != nullptr);
    CHECK(five[0].labels.at("package") == std::to_string(thread->package));
    CHECK(five[0].labels.at("core") == std::to_string(thread->core));
  }

  SECTION("a scribbled magic: the reason, no regions, and back once it is repaired") {
    const auto magic = writer.header().magic;
    writer.header().magic = 0xdeadbeef;
    samples = test::scrape(*collector);
    CHECK(test::value_of(samples, "hwperf_region_segment_valid",
                         {{"target", "app"}, {"reason", "bad_magic"}}) == 0);
    CHECK(test::find_samples(samples, "hwperf_region_calls_total").empty());
    writer.header().magic = magic;
    samples = test::scrape(*collector);
    check_regions(samples, written, per_cpu);
  }
  SECTION("counts scribbled backwards are not exported") {
    writer.set(0, 1, 1, {1, 1});
    samples = test::scrape(*collector);
    check_regions(samples, written, per_cpu);
    CHECK(test::value_of(samples, "hwperf_region_slot_reads_skipped_total",
                         {{"target", "app"}, {"why", "backwards"}}) == 1);
  }
  SECTION("a slot naming an unpublished region") {
    writer.slots()[1].region = 77;
    samples = test::scrape(*collector);
    CHECK(test::value_of(samples, "hwperf_region_segment_valid",
                         {{"target", "app"}, {"reason", "bad_slot"}}) == 0);
  }
}

TEST_CASE("A sealed memfd named hwperf-regions is found in a counted process", "[live][region]") {
  // As the library does for a program started elsewhere: the process (this test) creates and
  // holds the segment; the event table has one event the exporter does not count.
  const auto layout = region_segment_layout(4, 8);
  UniqueFd fd = create_region_segment(4, 8);
  hwperf_region_event cycles = test::software_event(0, "cycles");
  cycles.type = PERF_TYPE_HARDWARE;
  cycles.config = PERF_COUNT_HW_CPU_CYCLES;
  publish_region_events(fd.get(),
                        {test::software_event(PERF_COUNT_SW_TASK_CLOCK, "task-clock"), cycles,
                         test::software_event(PERF_COUNT_SW_PAGE_FAULTS, "page-faults")});
  FakeRegionWriter writer(fd.get(), layout.size);
  const auto region = writer.add_region("loop");
  writer.set(writer.add_slot(region, 1, 0), 7, 7000, {6000, 123456, 5});
  ProcessTargetConfig target;
  target.name = "app";
  target.selector = ProcessTargetConfig::Selector::pid;
  target.pid = ::getpid();
  const Topology topology = Topology::load(TopologyConfig{});
  auto collector = process::make_process_collector(region_config(target, true, false), topology,
                                                   papi::preset_catalog());
  const auto samples = test::scrape(*collector);
  const std::map<std::string, std::string> labels = {{"target", "app"}, {"region", "loop"}};
  CHECK(test::value_of(samples, "hwperf_region_calls_total", labels) == 7);
  CHECK(test::value_of(samples, region_family(kEvents[0]), labels) == Approx(6000 / 1e9));
  // Matched by type and config, not by position: page faults are the third event there.
  CHECK(test::value_of(samples, region_family(kEvents[1]), labels) == 5);
  CHECK(test::value_of(samples, "hwperf_region_segment_valid",
                       {{"target", "app"}, {"pid", std::to_string(::getpid())}}) == 1);
  CHECK(test::value_of(samples, "hwperf_region_segments", {{"target", "app"}}) == 1);
}

TEST_CASE("Only a sealed memfd is mapped as a segment", "[region]") {
  SECTION("found in this process") {
    UniqueFd fd = create_region_segment(2, 2);
    const auto opening = region::find_process_segment("/proc", ::getpid());
    REQUIRE(opening.segment);
    CHECK(opening.segment->mapping.size() == region_segment_layout(2, 2).size);
  }
  SECTION("unsealed: could shrink under the mapping") {
    UniqueFd fd(::memfd_create(HWPERF_REGION_MEMFD_NAME, MFD_CLOEXEC));
    REQUIRE(fd.valid());
    REQUIRE(::ftruncate(fd.get(), 4096) == 0);
    const auto opening = region::find_process_segment("/proc", ::getpid());
    CHECK_FALSE(opening.segment);
    CHECK(opening.problem == region::Problem::open_failed);
    CHECK_THAT(opening.reason, Catch::Contains("not sealed"));
  }
  SECTION("a regular file is refused") {
    const auto path = test::unique_temp_path("hwperf-region-");
    std::ofstream(path) << std::string(4096, '\0');
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    REQUIRE(fd.valid());
    const auto opening = region::map_segment(std::move(fd), path.string());
    CHECK(opening.problem == region::Problem::open_failed);
    std::filesystem::remove(path);
  }
  SECTION("a file named like it on another filesystem is refused before it is opened") {
    // An unlinked file at /memfd:hwperf-regions: its link reads like the library's memfd to the
    // byte, as a FUSE file of that name would (whose server could leave an open hanging).
    const std::string path = std::string("/memfd:") + HWPERF_REGION_MEMFD_NAME;
    UniqueFd file(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    INFO(path << ": " << std::strerror(errno) << " (the tests run as root)");
    REQUIRE(file.valid());
    // Any open of it from now on is an IN_OPEN event; O_PATH, which opens nothing, is none.
    UniqueFd watch(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
    REQUIRE(::inotify_add_watch(watch.get(), path.c_str(), IN_OPEN) >= 0);
    REQUIRE(::unlink(path.c_str()) == 0);
    REQUIRE(::ftruncate(file.get(), 4096) == 0);
    const auto opening = region::find_process_segment("/proc", ::getpid());
    CHECK_FALSE(opening.segment);
    CHECK(opening.problem == region::Problem::open_failed);
    CHECK_THAT(opening.reason, Catch::Contains("not the kernel's shared-memory mount"));
    char events[256];
    CHECK(::read(watch.get(), events, sizeof events) < 0);  // EAGAIN: nothing opened it
  }
  SECTION("none in a process without one") {
    const auto opening = region::find_process_segment("/proc", 1);
    CHECK_FALSE(opening.segment);
  }
}
