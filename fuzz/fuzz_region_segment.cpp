// libFuzzer target: a region segment is the measured program's memory, which any local user's
// program can scribble on. The bytes are copied 8-byte aligned, as a mapping is, and read twice
// through one SegmentReader (the second read compares against the first), with the default read
// limits and with small ones (a few odd slots spend the budget).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "collectors/region/region_segment_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::uint64_t> aligned((size + 7) / 8);
  if (size > 0) std::memcpy(aligned.data(), data, size);
  const auto* bytes = reinterpret_cast<const unsigned char*>(aligned.data());
  // The default limits, and limits small enough that a few odd slots spend the budget and the
  // second read starts where the first stopped.
  for (const hwperf::region::ReadLimits limits :
       {hwperf::region::ReadLimits{}, hwperf::region::ReadLimits{1, 2}}) {
    hwperf::region::SegmentReader reader;
    for (int pass = 0; pass < 2; ++pass) {
      const auto result = reader.read(bytes, size, limits);
      if (!result.ok()) continue;
      const auto& snapshot = result.snapshot;
      for (const auto& slot : snapshot.slots) {
        // Every slot kept names a region the snapshot has.
        if (slot && slot->region >= snapshot.regions.size()) __builtin_trap();
      }
      // The budget is kept: no more slots skipped than there are, a next slot among them.
      if (snapshot.torn_slots + snapshot.unread_slots > snapshot.slots.size()) __builtin_trap();
      if (snapshot.unread_slots > 0 && snapshot.next_slot >= snapshot.slots.size()) {
        __builtin_trap();
      }
    }
  }
  return 0;
}
