// The region segment reader (collectors/region/region_segment_reader.h) against segments built
// by a fake writer from the layout: valid reads, every header field scribbled on, names that
// cannot be labels, torn and backwards slots, and a writer changing slots during reads.
#include "tests/catch.hpp"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <functional>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "collectors/region/region_segment_reader.h"
#include "tests/support/region_segment_fake.h"

using namespace hwperf;
using namespace hwperf::region;
using hwperf::test::BusyCpus;
using hwperf::test::FakeRegionWriter;
using hwperf::test::software_event;

namespace {

constexpr auto max64 = std::numeric_limits<std::uint64_t>::max();
constexpr auto max32 = std::numeric_limits<std::uint32_t>::max();

std::vector<hwperf_region_event> two_events() {
  return {software_event(PERF_COUNT_SW_TASK_CLOCK, "task-clock"),
          software_event(PERF_COUNT_SW_PAGE_FAULTS, "page-faults")};
}

ReadResult read(const FakeRegionWriter& writer) {
  return read_segment(writer.base(), writer.size());
}

// A slot's counts of the segment's first `events` events.
std::vector<std::uint64_t> counts(const SlotValues& slot, std::size_t events = 2) {
  return {slot.counts.begin(), slot.counts.begin() + static_cast<std::ptrdiff_t>(events)};
}

}  // namespace

TEST_CASE("a valid region segment reads back what its writer published", "[region]") {
  FakeRegionWriter writer(4, 8, two_events());
  const auto compute = writer.add_region("compute");
  const auto sleep = writer.add_region("sleep");
  struct Written {
    std::uint32_t region;
    std::int32_t tid, cpu;
    std::uint64_t calls, time_ns;
    std::vector<std::uint64_t> counts;
  };
  const std::vector<Written> written = {{compute, 100, 0, 3, 1500, {1400, 7}},
                                        {compute, 101, 1, 5, 2500, {2400, 9}},
                                        {sleep, 100, 1, 1, 300000000, {20000, 1}}};
  for (const auto& slot : written) {
    writer.set(writer.add_slot(slot.region, slot.tid, slot.cpu), slot.calls, slot.time_ns,
               slot.counts);
  }
  writer.header().writer_pid = 4242;
  writer.header().dropped = 2;
  const ReadResult result = read(writer);
  REQUIRE(result.ok());
  const Snapshot& snapshot = result.snapshot;
  CHECK(snapshot.writer_pid == 4242);
  CHECK(snapshot.dropped == 2);
  REQUIRE(snapshot.events.size() == 2);
  CHECK(snapshot.events[0].type == PERF_TYPE_SOFTWARE);
  CHECK(snapshot.events[0].config == PERF_COUNT_SW_TASK_CLOCK);
  CHECK(snapshot.events[1].name == "page-faults");
  REQUIRE(snapshot.regions.size() == 2);
  CHECK(snapshot.regions[compute] == std::optional<std::string>("compute"));
  CHECK(snapshot.regions[sleep] == std::optional<std::string>("sleep"));
  REQUIRE(snapshot.slots.size() == written.size());
  for (std::size_t i = 0; i < written.size(); ++i) {
    REQUIRE(snapshot.slots[i]);
    CHECK(snapshot.slots[i]->region == written[i].region);
    CHECK(snapshot.slots[i]->tid == written[i].tid);
    CHECK(snapshot.slots[i]->cpu == written[i].cpu);
    CHECK(snapshot.slots[i]->calls == written[i].calls);
    CHECK(snapshot.slots[i]->time_ns == written[i].time_ns);
    CHECK(counts(*snapshot.slots[i]) == written[i].counts);
  }
  CHECK(snapshot.torn_slots == 0);
  CHECK(snapshot.notes.empty());
}

TEST_CASE("a scribbled region header is refused with its reason", "[region]") {
  struct Case {
    const char* what;
    std::function<void(hwperf_region_header&, std::size_t size)> scribble;
    Problem problem;
    std::function<std::string(const hwperf_region_header&, std::size_t size)> reason;
  };
  const auto text = [](std::string fixed) {
    return [fixed](const hwperf_region_header&, std::size_t) { return fixed; };
  };
  const Case c = GENERATE_COPY(
      Case{"wrong magic", [](auto& h, auto) { h.magic = 0x1122334455667788; }, Problem::bad_magic,
           text("bad magic 0x1122334455667788")},
      Case{"state never READY", [](auto& h, auto) { h.state = HWPERF_REGION_STATE_CREATED; },
           Problem::not_ready, text("still being written")},
      Case{"unknown state", [](auto& h, auto) { h.state = 9; }, Problem::bad_header,
           text("unknown state 9")},
      Case{"a later version", [](auto& h, auto) { h.version = 7; }, Problem::bad_version,
           text("version 7 not supported")},
      Case{"header_size", [](auto& h, auto) { h.header_size += 8; }, Problem::bad_header,
           [](const auto& h, auto) { return "header_size " + std::to_string(h.header_size); }},
      Case{"segment_size beyond the mapping", [](auto& h, auto) { h.segment_size = 400000; },
           Problem::truncated,
           [](const auto&, std::size_t size) {
             return "truncated: " + std::to_string(size) + " bytes, header says 400000";
           }},
      Case{"segment_size huge", [](auto& h, auto) { h.segment_size = max64; }, Problem::truncated,
           text("header says " + std::to_string(max64))},
      Case{
          "event_count", [](auto& h, auto) { h.event_count = HWPERF_REGION_MAX_EVENTS + 1; },
          Problem::bad_bounds,
          text("event_count " + std::to_string(HWPERF_REGION_MAX_EVENTS + 1) + " above the limit")},
      Case{"huge max_regions", [](auto& h, auto) { h.max_regions = max32; }, Problem::bad_bounds,
           text("max_regions " + std::to_string(max32))},
      Case{"huge max_slots", [](auto& h, auto) { h.max_slots = max32; }, Problem::bad_bounds,
           text("max_slots " + std::to_string(max32))},
      Case{"region_count past max_regions",
           [](auto& h, auto) { h.region_count = h.max_regions + 1; }, Problem::bad_bounds,
           [](const auto& h, auto) {
             return "region_count " + std::to_string(h.region_count) + " above max_regions " +
                    std::to_string(h.max_regions);
           }},
      Case{"slot_count past max_slots", [](auto& h, auto) { h.slot_count = max32; },
           Problem::bad_bounds, text("slot_count " + std::to_string(max32))},
      Case{"names past the end", [](auto& h, std::size_t size) { h.names_offset = size + 64; },
           Problem::bad_offsets, text("past the end")},
      Case{"slots ending past the end",
           [](auto& h, std::size_t size) { h.slots_offset = (size - 64) & ~std::uint64_t{63}; },
           Problem::bad_offsets, text("end past the segment")},
      Case{"slots offset overflowing", [](auto& h, auto) { h.slots_offset = max64 - 63; },
           Problem::bad_offsets, text("past the end")},
      Case{"misaligned names", [](auto& h, auto) { h.names_offset += 8; }, Problem::bad_offsets,
           text("not 64-byte aligned")},
      Case{"names inside the header", [](auto& h, auto) { h.names_offset = 0; },
           Problem::bad_offsets, text("inside the header")},
      Case{"names overlapping slots", [](auto& h, auto) { h.names_offset = h.slots_offset; },
           Problem::bad_offsets, text("overlap slots")});
  FakeRegionWriter writer(4, 8, two_events());
  writer.add_region("compute");
  writer.set(writer.add_slot(0, 1, 0), 1, 2, {3, 4});
  c.scribble(writer.header(), writer.size());
  const ReadResult result = read(writer);
  INFO(c.what << ": " << result.reason);
  CHECK(result.problem == c.problem);
  CHECK_THAT(result.reason, Catch::Contains(c.reason(writer.header(), writer.size())));
}

TEST_CASE("a region segment read through a short or misplaced view is refused", "[region]") {
  FakeRegionWriter writer(4, 8, two_events());
  SECTION("shorter than a header") {
    const ReadResult result = read_segment(writer.base(), 100);
    CHECK(result.problem == Problem::truncated);
    CHECK_THAT(result.reason, Catch::Contains("truncated: 100 bytes, a header needs " +
                                              std::to_string(sizeof(hwperf_region_header))));
  }
  SECTION("shorter than the header says") {
    const std::size_t mapped = writer.size() - 64;
    const ReadResult result = read_segment(writer.base(), mapped);
    CHECK(result.problem == Problem::truncated);
    CHECK_THAT(result.reason,
               Catch::Contains("truncated: " + std::to_string(mapped) + " bytes, header says " +
                               std::to_string(writer.size())));
  }
  SECTION("not 8-byte aligned") {
    // operator new aligns to 16: one byte in is misaligned for every field.
    std::vector<unsigned char> copy(1, 0);
    copy.insert(copy.end(), writer.base(), writer.base() + writer.size());
    const unsigned char* odd = copy.data() + 1;
    CHECK(read_segment(odd, writer.size()).problem == Problem::bad_header);
  }
}

TEST_CASE("a slot naming a region past region_count refuses the segment", "[region]") {
  FakeRegionWriter writer(4, 8, two_events());
  writer.add_region("a");
  writer.add_region("b");
  writer.add_slot(1, 1, 0);
  const auto bad = writer.add_slot(1, 2, 0);
  writer.slots()[bad].region = 300;
  const ReadResult result = read(writer);
  CHECK(result.problem == Problem::bad_slot);
  CHECK(result.reason == "slot " + std::to_string(bad) + " names region 300 of 2");
}

TEST_CASE("region names that cannot be labels are refused one by one", "[region]") {
  struct Case {
    const char* what;
    std::string bytes;  // up to 64 bytes copied as the name
    std::string reason;
  };
  const Case c = GENERATE(Case{"unterminated", std::string(64, 'x'), "not NUL-terminated"},
                          Case{"empty", std::string(), "empty"},
                          Case{"a control character", "a\tb", "not printable UTF-8"},
                          Case{"DEL", "a\x7f", "not printable UTF-8"},
                          Case{"a C1 control", "a\xc2\x85", "not printable UTF-8"},
                          Case{"invalid UTF-8", "caf\xe9", "not printable UTF-8"},
                          Case{"an overlong form", "\xc0\xaf", "not printable UTF-8"},
                          Case{"a surrogate", "\xed\xa0\x80", "not printable UTF-8"},
                          Case{"cut in a sequence", "ab\xe2\x82", "not printable UTF-8"},
                          Case{"a duplicate", "good", "a duplicate"});
  FakeRegionWriter writer(4, 8, two_events());
  writer.add_region("good");
  const auto bad = writer.add_region("placeholder");
  std::memset(writer.names()[bad].name, 0, HWPERF_REGION_NAME_BYTES);
  std::memcpy(writer.names()[bad].name, c.bytes.data(), c.bytes.size());
  writer.add_region("r\xc3\xa9sum\xc3\xa9 \xe2\x9c\x93");  // printable UTF-8 is fine
  writer.set(writer.add_slot(0, 1, 0), 1, 10, {10, 1});
  writer.set(writer.add_slot(bad, 1, 0), 2, 20, {20, 2});
  writer.set(writer.add_slot(2, 1, 0), 3, 30, {30, 3});
  const ReadResult result = read(writer);
  INFO(c.what);
  REQUIRE(result.ok());
  const auto& snapshot = result.snapshot;
  CHECK(snapshot.regions[0] == std::optional<std::string>("good"));
  CHECK_FALSE(snapshot.regions[bad]);
  CHECK(snapshot.regions[2] == std::optional<std::string>("r\xc3\xa9sum\xc3\xa9 \xe2\x9c\x93"));
  REQUIRE(snapshot.notes.size() == 1);
  CHECK_THAT(snapshot.notes[0], Catch::Contains("region " + std::to_string(bad) + " refused"));
  CHECK_THAT(snapshot.notes[0], Catch::Contains(c.reason));
  // The refused region's slot is left out; the others are read.
  CHECK(snapshot.slots[0]);
  CHECK_FALSE(snapshot.slots[1]);
  REQUIRE(snapshot.slots[2]);
  CHECK(snapshot.slots[2]->calls == 3);
}

TEST_CASE("a slot whose seq stays odd is skipped and counted, the others read", "[region]") {
  FakeRegionWriter writer(4, 8, two_events());
  writer.add_region("r");
  writer.set(writer.add_slot(0, 1, 0), 1, 10, {10, 1});
  const auto stuck = writer.add_slot(0, 2, 0);
  writer.set(stuck, 2, 20, {20, 2});
  writer.slots()[stuck].seq |= 1u;  // a writer stopped mid-update
  const ReadResult result = read(writer);
  REQUIRE(result.ok());
  CHECK(result.snapshot.torn_slots == 1);
  CHECK(result.snapshot.slots[0]);
  CHECK_FALSE(result.snapshot.slots[stuck]);
}

TEST_CASE("a segment whose every slot stays odd is read within its budget on busy CPUs",
          "[region]") {
  // As a hostile program holds it: every slot mid-update, forever, its threads on every CPU.
  FakeRegionWriter writer(1, HWPERF_REGION_MAX_SLOTS, two_events());
  writer.add_region("r");
  hwperf::test::fill_odd_slots(writer, HWPERF_REGION_MAX_SLOTS);
  const ReadLimits limits;
  ReadResult result;
  double seconds = 0;
  {
    BusyCpus busy(5.0 * HWPERF_SLOWDOWN);
    const auto start = std::chrono::steady_clock::now();
    result = read_segment(writer.base(), writer.size(), limits);
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  REQUIRE(result.ok());
  // Each slot read costs its tries until the read's failed tries are spent; the rest are left.
  const std::size_t torn = limits.failed_tries / limits.tries_per_slot;
  CHECK(result.snapshot.torn_slots == torn);
  CHECK(result.snapshot.unread_slots == HWPERF_REGION_MAX_SLOTS - torn);
  CHECK(result.snapshot.next_slot == torn);
  for (const auto& slot : result.snapshot.slots) CHECK_FALSE(slot);
  // A few thousand loads and pauses; a yield per retry took seconds on a busy machine.
  CHECK(seconds < 0.5 * HWPERF_SLOWDOWN);
}

TEST_CASE("slots a spent budget left unread are read first the next time", "[region]") {
  FakeRegionWriter writer(1, 8, two_events());
  writer.add_region("r");
  for (std::uint32_t s = 0; s < 8; ++s) {
    writer.set(writer.add_slot(0, static_cast<std::int32_t>(s + 1), 0), s + 1, 10, {1, 1});
  }
  // Slots 0 and 1 stuck odd spend the whole budget: 2 tries each.
  writer.slots()[0].seq |= 1u;
  writer.slots()[1].seq |= 1u;
  const ReadLimits limits{2, 4};
  SegmentReader reader;
  const ReadResult first = reader.read(writer.base(), writer.size(), limits);
  REQUIRE(first.ok());
  CHECK(first.snapshot.torn_slots == 2);
  CHECK(first.snapshot.unread_slots == 6);
  CHECK(reader.next_slot() == 2);
  const ReadResult second = reader.read(writer.base(), writer.size(), limits);
  REQUIRE(second.ok());
  CHECK(second.snapshot.unread_slots == 0);
  CHECK(second.snapshot.torn_slots == 2);
  for (std::uint32_t s = 2; s < 8; ++s) {
    REQUIRE(second.snapshot.slots[s]);
    CHECK(second.snapshot.slots[s]->calls == s + 1);
  }
  CHECK(reader.next_slot() == 0);
}

TEST_CASE("counts going backwards keep the previous values", "[region]") {
  FakeRegionWriter writer(4, 8, two_events());
  writer.add_region("r");
  const auto slot = writer.add_slot(0, 1, 0);
  writer.set(slot, 5, 500, {500, 50});
  SegmentReader reader;
  REQUIRE(reader.read(writer.base(), writer.size()).ok());
  SECTION("a count") { writer.set(slot, 6, 600, {400, 60}); }
  SECTION("the calls") { writer.set(slot, 4, 600, {600, 60}); }
  SECTION("the slot's thread") {
    writer.slots()[slot].tid = 99;
    writer.set(slot, 6, 600, {600, 60});
  }
  const ReadResult second = reader.read(writer.base(), writer.size());
  REQUIRE(second.ok());
  REQUIRE(second.snapshot.slots[slot]);
  CHECK(second.snapshot.slots[slot]->calls == 5);
  CHECK(counts(*second.snapshot.slots[slot]) == std::vector<std::uint64_t>{500, 50});
  CHECK(reader.backwards() == 1);
  REQUIRE(second.snapshot.notes.size() == 1);
  CHECK_THAT(second.snapshot.notes[0], Catch::Contains("counts went backwards"));
  // Once it grows past what was read, it is taken again.
  writer.slots()[slot].tid = 1;
  writer.set(slot, 7, 700, {700, 70});
  const ReadResult third = reader.read(writer.base(), writer.size());
  REQUIRE(third.ok());
  CHECK(third.snapshot.slots[slot]->calls == 7);
  CHECK(reader.backwards() == 1);
}

TEST_CASE("a region whose slot_count or name shrinks keeps what was read", "[region]") {
  FakeRegionWriter writer(4, 8, two_events());
  writer.add_region("r");
  writer.set(writer.add_slot(0, 1, 0), 5, 500, {500, 50});
  SegmentReader reader;
  REQUIRE(reader.read(writer.base(), writer.size()).ok());
  writer.header().slot_count = 0;
  std::strcpy(writer.names()[0].name, "other");
  const ReadResult second = reader.read(writer.base(), writer.size());
  REQUIRE(second.ok());
  CHECK(second.snapshot.regions[0] == std::optional<std::string>("r"));
  REQUIRE(second.snapshot.slots.size() == 1);
  CHECK(second.snapshot.slots[0]->calls == 5);
}

TEST_CASE("a reader never returns a slot torn by a concurrent writer", "[region][concurrency]") {
  const std::vector<hwperf_region_event> events(HWPERF_REGION_MAX_EVENTS,
                                                software_event(PERF_COUNT_SW_TASK_CLOCK, "t"));
  FakeRegionWriter writer(2, 4, events);
  writer.add_region("hot");
  const auto slot = writer.add_slot(0, 1, 0);
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> written{0};
  // Every field of the slot carries the same value at every update: a mix of two updates is
  // a slot whose fields differ.
  std::thread writer_thread([&] {
    for (std::uint64_t value = 1; !stop.load(std::memory_order_relaxed); ++value) {
      writer.set(slot, value, value, std::vector<std::uint64_t>(HWPERF_REGION_MAX_EVENTS, value));
      written.store(value, std::memory_order_relaxed);
    }
  });
  SegmentReader reader;
  std::size_t consistent = 0, skipped = 0, mixed = 0;
  std::uint64_t last = 0;
  std::size_t changes = 0;
  bool backwards = false;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
  while (std::chrono::steady_clock::now() < until) {
    const ReadResult result = reader.read(writer.base(), writer.size());
    if (!result.ok() || !result.snapshot.slots[0]) {
      ++skipped;
      continue;
    }
    const SlotValues& values = *result.snapshot.slots[0];
    bool same = values.time_ns == values.calls;
    for (const auto count : values.counts) same = same && count == values.calls;
    if (same) {
      ++consistent;
    } else {
      ++mixed;
    }
    if (values.calls < last) backwards = true;
    if (values.calls != last) ++changes;
    last = values.calls;
  }
  stop = true;
  writer_thread.join();
  INFO(consistent << " consistent reads, " << skipped << " skipped, writer at " << written.load());
  CHECK(mixed == 0);
  CHECK_FALSE(backwards);
  CHECK(consistent > 0);
  CHECK(changes > 1);  // the writer really ran across the reads
}

TEST_CASE("the fuzz seed is a valid small segment as this layout writes it", "[region]") {
  // fuzz/corpus/region_segment/valid_small: regenerate with HWPERF_UPDATE_GOLDEN=1 after a
  // layout change, so libFuzzer starts from a segment that passes every check.
  FakeRegionWriter writer(2, 4, two_events());
  writer.add_region("compute");
  writer.add_region("sleep");
  writer.set(writer.add_slot(0, 100, 0), 3, 1500, {1400, 7});
  writer.set(writer.add_slot(0, 101, 1), 5, 2500, {2400, 9});
  writer.set(writer.add_slot(1, 100, 1), 1, 3000, {200, 1});
  const std::string path =
      std::string(HWPERF_SOURCE_DIR) + "/fuzz/corpus/region_segment/valid_small";
  const std::string bytes(reinterpret_cast<const char*>(writer.base()), writer.size());
  if (std::getenv("HWPERF_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  }
  std::ifstream file(path, std::ios::binary);
  const std::string seed((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  REQUIRE(seed == bytes);
  std::vector<std::uint64_t> aligned(seed.size() / 8);
  std::memcpy(aligned.data(), seed.data(), seed.size());
  const ReadResult result =
      read_segment(reinterpret_cast<const unsigned char*>(aligned.data()), seed.size());
  REQUIRE(result.ok());
  CHECK(result.snapshot.regions.size() == 2);
  CHECK(result.snapshot.slots.size() == 3);
}

// The segment's rules live once, in markers/include/hwperf/region_segment.h: the exporter's
// creator lays a segment out with hwperf_region_layout, and the reader refuses exactly what
// hwperf_region_check refuses, which is what the library checks before its first write.
TEST_CASE("the region segment's layout and checks are the header's, on the reader's side too",
          "[region]") {
  const auto layout = region_segment_layout(4, 8);
  std::uint64_t names = 0, slots = 0;
  CHECK(layout.size == hwperf_region_layout(4, 8, &names, &slots));
  CHECK(layout.names_offset == names);
  CHECK(layout.slots_offset == slots);
  CHECK(names % HWPERF_REGION_ALIGN == 0);
  CHECK(slots % HWPERF_REGION_ALIGN == 0);

  FakeRegionWriter writer(4, 8, two_events());
  const auto check = [&] {
    const hwperf_region_header& h = writer.header();
    const hwperf_region_fields f{h.state,        h.magic,        h.version,     h.header_size,
                                 h.segment_size, h.event_count,  h.max_regions, h.max_slots,
                                 h.names_offset, h.slots_offset, h.slot_count,  h.region_count};
    return hwperf_region_check(&f, writer.size());
  };
  CHECK(check() == HWPERF_REGION_CHECK_OK);
  // Slots 8 bytes further on, one fewer so that they still fit: aligned for every field they
  // hold, but not on a cache line of their own.
  writer.header().max_slots -= 1;
  writer.header().slots_offset += 8;
  CHECK(check() == HWPERF_REGION_CHECK_SLOTS_ALIGNMENT);
  const ReadResult result = read(writer);
  CHECK(result.problem == Problem::bad_offsets);
  CHECK_THAT(result.reason,
             Catch::Contains("slots at " + std::to_string(writer.header().slots_offset) +
                             ": not 64-byte aligned"));
}
