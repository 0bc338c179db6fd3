#include "common/region_segment_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace hwperf {
namespace {

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error("region segment: " + what + ": " + std::strerror(errno));
}

}  // namespace

RegionSegmentLayout region_segment_layout(std::uint32_t max_regions, std::uint32_t max_slots) {
  if (max_regions == 0 || max_regions > HWPERF_REGION_MAX_REGIONS || max_slots == 0 ||
      max_slots > HWPERF_REGION_MAX_SLOTS) {
    throw std::invalid_argument("region segment: " + std::to_string(max_regions) + " regions and " +
                                std::to_string(max_slots) + " slots: outside 1.." +
                                std::to_string(HWPERF_REGION_MAX_REGIONS) + " and 1.." +
                                std::to_string(HWPERF_REGION_MAX_SLOTS));
  }
  RegionSegmentLayout layout;
  layout.size =
      hwperf_region_layout(max_regions, max_slots, &layout.names_offset, &layout.slots_offset);
  return layout;
}

UniqueMapping::~UniqueMapping() noexcept {
  if (address_ != nullptr) ::munmap(address_, size_);
}

UniqueMapping::UniqueMapping(UniqueMapping&& other) noexcept
    : address_(other.address_), size_(other.size_) {
  other.address_ = nullptr;
  other.size_ = 0;
}

UniqueMapping& UniqueMapping::operator=(UniqueMapping&& other) noexcept {
  if (this != &other) {
    if (address_ != nullptr) ::munmap(address_, size_);
    address_ = other.address_;
    size_ = other.size_;
    other.address_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

UniqueMapping map_file(int fd, std::size_t size, bool writable) {
  void* address =
      ::mmap(nullptr, size, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
  if (address == MAP_FAILED) fail("mmap of " + std::to_string(size) + " bytes");
  return UniqueMapping(address, size);
}

UniqueFd create_region_segment(std::uint32_t max_regions, std::uint32_t max_slots) {
  const RegionSegmentLayout layout = region_segment_layout(max_regions, max_slots);
  UniqueFd fd(::memfd_create(HWPERF_REGION_MEMFD_NAME, MFD_ALLOW_SEALING | MFD_CLOEXEC));
  if (!fd.valid()) fail("memfd_create");
  if (::ftruncate(fd.get(), static_cast<off_t>(layout.size)) != 0) fail("ftruncate");
  if (::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    fail("F_ADD_SEALS");
  }
  UniqueMapping mapping = map_file(fd.get(), layout.size, true);
  write_region_header(mapping.writable(), max_regions, max_slots);
  return fd;
}

void write_region_header(unsigned char* base, std::uint32_t max_regions, std::uint32_t max_slots) {
  const RegionSegmentLayout layout = region_segment_layout(max_regions, max_slots);
  auto* header = reinterpret_cast<hwperf_region_header*>(base);
  header->magic = HWPERF_REGION_MAGIC;
  header->version = HWPERF_REGION_VERSION;
  header->header_size = sizeof(hwperf_region_header);
  header->segment_size = layout.size;
  header->max_regions = max_regions;
  header->max_slots = max_slots;
  header->names_offset = layout.names_offset;
  header->slots_offset = layout.slots_offset;
  __atomic_store_n(&header->state, HWPERF_REGION_STATE_CREATED, __ATOMIC_RELEASE);
}

void write_region_events(unsigned char* base, const std::vector<hwperf_region_event>& events) {
  if (events.size() > HWPERF_REGION_MAX_EVENTS) {
    throw std::invalid_argument("region segment: " + std::to_string(events.size()) +
                                " events, at most " + std::to_string(HWPERF_REGION_MAX_EVENTS));
  }
  auto* header = reinterpret_cast<hwperf_region_header*>(base);
  for (std::size_t i = 0; i < events.size(); ++i) header->events[i] = events[i];
  header->event_count = static_cast<std::uint32_t>(events.size());
  __atomic_store_n(&header->state, HWPERF_REGION_STATE_READY, __ATOMIC_RELEASE);
}

void publish_region_events(int fd, const std::vector<hwperf_region_event>& events) {
  struct stat info {};
  if (::fstat(fd, &info) != 0) fail("fstat");
  UniqueMapping mapping = map_file(fd, static_cast<std::size_t>(info.st_size), true);
  write_region_events(mapping.writable(), events);
}

}  // namespace hwperf
