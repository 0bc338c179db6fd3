// libFuzzer target: a region segment is the measured program's memory, which any local user's
// program can scribble on. The bytes are copied 8-byte aligned, as a mapping is, and read twice
// through one SegmentReader (the second read compares against the first).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "collectors/region/region_segment_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::uint64_t> aligned((size + 7) / 8);
  if (size > 0) std::memcpy(aligned.data(), data, size);
  const auto* bytes = reinterpret_cast<const unsigned char*>(aligned.data());
  hwperf::region::SegmentReader reader;
  for (int pass = 0; pass < 2; ++pass) {
    const auto result = reader.read(bytes, size);
    if (!result.ok()) continue;
    for (const auto& slot : result.snapshot.slots) {
      // Every slot kept names a region the snapshot has.
      if (slot && slot->region >= result.snapshot.regions.size()) __builtin_trap();
    }
  }
  return 0;
}
