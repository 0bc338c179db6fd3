// A fake writer of region segments, written from the layout header alone (no dependency on the
// marker library): it publishes names and slots in the order the contract gives the library
// (name, then region_count with release; slot body, then slot_count with release) and updates
// slots under their seqlock. Over memory (the reader's unit tests, the fuzz seed) or over a
// sealed memfd from create_region_segment (the collector's tests).
#pragma once

#include <linux/perf_event.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/region_segment_file.h"
#include "common/unique_fd.h"

namespace hwperf::test {

inline hwperf_region_event software_event(std::uint64_t config, const char* name) {
  hwperf_region_event event{};
  event.type = PERF_TYPE_SOFTWARE;
  event.config = config;
  std::strncpy(event.name, name, sizeof event.name - 1);
  return event;
}

class FakeRegionWriter {
 public:
  // In memory, header and events written, READY.
  FakeRegionWriter(std::uint32_t max_regions, std::uint32_t max_slots,
                   const std::vector<hwperf_region_event>& events)
      : memory_(region_segment_layout(max_regions, max_slots).size / 8, 0) {
    base_ = reinterpret_cast<unsigned char*>(memory_.data());
    size_ = memory_.size() * 8;
    write_region_header(base_, max_regions, max_slots);
    write_region_events(base_, events);
  }
  // Over a segment someone else created (a memfd), mapped read-write here.
  explicit FakeRegionWriter(int fd, std::size_t size)
      : mapping_(map_file(fd, size, true)), base_(mapping_.writable()), size_(size) {}

  unsigned char* base() const { return base_; }
  std::size_t size() const { return size_; }
  hwperf_region_header& header() const { return *reinterpret_cast<hwperf_region_header*>(base_); }
  hwperf_region_name* names() const {
    return reinterpret_cast<hwperf_region_name*>(base_ + header().names_offset);
  }
  hwperf_region_slot* slots() const {
    return reinterpret_cast<hwperf_region_slot*>(base_ + header().slots_offset);
  }

  std::uint32_t add_region(const std::string& name) {
    const std::uint32_t index = header().region_count;
    std::memset(names()[index].name, 0, sizeof names()[index].name);
    std::memcpy(names()[index].name, name.data(),
                std::min(name.size(), sizeof(hwperf_region_name)));
    __atomic_store_n(&header().region_count, index + 1, __ATOMIC_RELEASE);
    return index;
  }
  std::uint32_t add_slot(std::uint32_t region, std::int32_t tid, std::int32_t cpu) {
    const std::uint32_t index = header().slot_count;
    hwperf_region_slot& slot = slots()[index];
    __atomic_store_n(&slot.seq, 1u, __ATOMIC_RELAXED);
    slot.region = region;
    slot.tid = tid;
    slot.cpu = cpu;
    __atomic_store_n(&slot.seq, 2u, __ATOMIC_RELEASE);
    __atomic_store_n(&header().slot_count, index + 1, __ATOMIC_RELEASE);
    return index;
  }
  // One update under the slot's seqlock, as the library's end-of-region does.
  void set(std::uint32_t index, std::uint64_t calls, std::uint64_t time_ns,
           const std::vector<std::uint64_t>& counts) {
    hwperf_region_slot& slot = slots()[index];
    const std::uint32_t seq = __atomic_load_n(&slot.seq, __ATOMIC_RELAXED);
    __atomic_store_n(&slot.seq, seq + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    __atomic_store_n(&slot.calls, calls, __ATOMIC_RELAXED);
    __atomic_store_n(&slot.time_ns, time_ns, __ATOMIC_RELAXED);
    for (std::size_t e = 0; e < counts.size(); ++e) {
      __atomic_store_n(&slot.counts[e], counts[e], __ATOMIC_RELAXED);
    }
    __atomic_store_n(&slot.seq, seq + 2, __ATOMIC_RELEASE);
  }

 private:
  std::vector<std::uint64_t> memory_;  // 8-byte aligned, as a mapping is
  UniqueMapping mapping_;
  unsigned char* base_ = nullptr;
  std::size_t size_ = 0;
};

// Threads that keep every CPU busy until destroyed (at most `seconds`), as a hostile program's
// threads would: a reader that yielded would give each of them a time slice.
class BusyCpus {
 public:
  explicit BusyCpus(double seconds) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    for (unsigned i = 0; i < std::thread::hardware_concurrency() + 1; ++i) {
      threads_.emplace_back([this, until] {
        while (!stop_.load(std::memory_order_relaxed) && std::chrono::steady_clock::now() < until) {
        }
      });
    }
  }
  ~BusyCpus() {
    stop_ = true;
    for (auto& thread : threads_) thread.join();
  }
  BusyCpus(const BusyCpus&) = delete;
  BusyCpus& operator=(const BusyCpus&) = delete;

 private:
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

// Every slot of a writer's segment added (region 0, thread s + 1) and left odd, mid-update.
inline void fill_odd_slots(FakeRegionWriter& writer, std::uint32_t slots) {
  for (std::uint32_t s = 0; s < slots; ++s) {
    writer.set(writer.add_slot(0, static_cast<std::int32_t>(s + 1), 0), 1, 1, {1, 1});
    writer.slots()[s].seq |= 1u;
  }
}

}  // namespace hwperf::test
