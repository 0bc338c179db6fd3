#include "collectors/perf/bpf/map_values.h"

#include <cstring>

#include "collectors/perf/bpf/map_layout.h"

namespace hwperf::perf::bpf {

std::size_t ValueShape::value_size() const { return hwperf_bpf_counts_size(events); }

std::size_t ValueShape::stride() const { return (value_size() + 7) / 8 * 8; }

void decode_counts(const std::uint64_t* keys, const unsigned char* values, std::size_t entries,
                   const ValueShape& shape, std::vector<CgroupCounts>& out) {
  const std::size_t cpus = shape.cpus.size();
  for (std::size_t e = 0; e < entries; ++e) {
    const unsigned char* entry = values + e * shape.entry_bytes();
    CgroupCounts counts;
    counts.id = keys[e];
    counts.values.resize(shape.events * cpus);
    // The rmdir program flags the copy of the CPU it ran on, which may be one not counted.
    for (std::size_t slot = 0; slot < shape.cpu_slots && !counts.removed; ++slot) {
      std::uint64_t flags = 0;
      std::memcpy(&flags, entry + slot * shape.stride(), sizeof flags);
      counts.removed = (flags & HWPERF_BPF_REMOVED) != 0;
    }
    for (std::size_t c = 0; c < cpus; ++c) {
      // A copy through memcpy: the buffer is bytes, and an entry's alignment is only 8.
      hwperf_bpf_counts copy{};
      std::memcpy(&copy, entry + shape.cpus[c] * shape.stride(), shape.value_size());
      for (std::size_t event = 0; event < shape.events; ++event) {
        counts.values[event * cpus + c] = {copy.sum[event].counter, copy.sum[event].enabled,
                                           copy.sum[event].running};
      }
    }
    out.push_back(std::move(counts));
  }
}

GroupReading group_reading(const CgroupCounts& counts, std::size_t first_event, std::size_t members,
                           std::size_t cpus, std::size_t cpu_index) {
  GroupReading reading;
  const Reading& leader = counts.values.at(first_event * cpus + cpu_index);
  reading.enabled_ns = leader.enabled_ns;
  reading.running_ns = leader.running_ns;
  for (std::size_t m = 0; m < members; ++m) {
    reading.values.push_back(counts.values.at((first_event + m) * cpus + cpu_index).value);
  }
  return reading;
}

std::vector<std::uint64_t> RemovalGrace::due(const std::vector<std::uint64_t>& removed_now) {
  std::vector<std::uint64_t> now_due;
  std::unordered_set<std::uint64_t> still_waiting;
  for (const std::uint64_t id : removed_now) {
    if (seen_.count(id) != 0) {
      now_due.push_back(id);
    } else {
      still_waiting.insert(id);
    }
  }
  seen_ = std::move(still_waiting);
  return now_due;
}

}  // namespace hwperf::perf::bpf
