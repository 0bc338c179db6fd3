// The creator's side of the region segment (markers/include/hwperf/region_segment.h): its layout
// and the sealed memfd that holds it. The exporter creates one for `-- CMD` before forking the
// command, and tests build valid segments with it; the reader (collectors/region) trusts none of
// this and checks every field again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/unique_fd.h"
#include "markers/include/hwperf/region_segment.h"

namespace hwperf {

struct RegionSegmentLayout {
  std::uint64_t names_offset = 0;
  std::uint64_t slots_offset = 0;
  std::uint64_t size = 0;
};

// Header, then max_regions names, then max_slots slots, each offset 64-byte aligned (the
// contract's layout); throws std::invalid_argument beyond the HWPERF_REGION_MAX_* bounds.
RegionSegmentLayout region_segment_layout(std::uint32_t max_regions, std::uint32_t max_slots);

// One mapping of a file, unmapped by its destructor. Move-only; the moved-from owner holds
// nothing.
class UniqueMapping {
 public:
  UniqueMapping() noexcept = default;
  UniqueMapping(void* address, std::size_t size) noexcept : address_(address), size_(size) {}
  ~UniqueMapping() noexcept;
  UniqueMapping(UniqueMapping&& other) noexcept;
  UniqueMapping& operator=(UniqueMapping&& other) noexcept;
  UniqueMapping(const UniqueMapping&) = delete;
  UniqueMapping& operator=(const UniqueMapping&) = delete;

  const unsigned char* data() const noexcept { return static_cast<unsigned char*>(address_); }
  unsigned char* writable() const noexcept { return static_cast<unsigned char*>(address_); }
  std::size_t size() const noexcept { return size_; }
  bool valid() const noexcept { return address_ != nullptr; }

 private:
  void* address_ = nullptr;
  std::size_t size_ = 0;
};

// Maps `size` bytes of `fd` shared, read-only or read-write; errno text in the exception.
UniqueMapping map_file(int fd, std::size_t size, bool writable);

// A memfd named HWPERF_REGION_MEMFD_NAME (close-on-exec), sized and laid out for `max_regions`
// and `max_slots`, its size sealed (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) so no mapping of
// it can lose pages, with the header written but for the events and state (CREATED). Throws
// std::runtime_error naming the call that failed.
UniqueFd create_region_segment(std::uint32_t max_regions = HWPERF_REGION_MAX_REGIONS,
                               std::uint32_t max_slots = HWPERF_REGION_MAX_SLOTS);

// The same two steps on memory the caller laid out (region_segment_layout(...).size bytes, zeroed,
// 8-byte aligned): the header but for events and state; then the events and READY.
void write_region_header(unsigned char* base, std::uint32_t max_regions, std::uint32_t max_slots);
void write_region_events(unsigned char* base, const std::vector<hwperf_region_event>& events);

// Writes the event table (at most HWPERF_REGION_MAX_EVENTS) into a segment made by
// create_region_segment, then sets the state to READY, last and with release ordering: the
// library counts only once it sees READY.
void publish_region_events(int fd, const std::vector<hwperf_region_event>& events);

}  // namespace hwperf
