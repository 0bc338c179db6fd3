#include "collectors/region/region_segment_reader.h"

#include <cstdio>
#include <set>
#include <string_view>

#include "markers/include/hwperf/region_segment.h"

namespace hwperf::region {
namespace {

// Every read of the mapping goes through here: the writer changes it while we copy, so each
// field is loaded once, atomically, and then only the copy is looked at.
template <typename T>
T load(const T* field) {
  return __atomic_load_n(field, __ATOMIC_RELAXED);
}
template <typename T>
T load_acquire(const T* field) {
  return __atomic_load_n(field, __ATOMIC_ACQUIRE);
}

std::string copy_name(const char (&bytes)[HWPERF_REGION_NAME_BYTES], bool& terminated) {
  std::string name;
  terminated = false;
  for (std::size_t i = 0; i < HWPERF_REGION_NAME_BYTES; ++i) {
    const char c = load(&bytes[i]);
    if (c == '\0') {
      terminated = true;
      break;
    }
    name.push_back(c);
  }
  return name;
}

// Valid UTF-8 (no overlong forms, surrogates or values past U+10FFFF) without control
// characters (C0, DEL, C1): a label value a person can read and no exposition format chokes on.
bool printable_utf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    std::uint32_t code = 0;
    std::size_t length = 0;
    if (c < 0x80) {
      code = c;
      length = 1;
    } else if (c >= 0xc2 && c <= 0xdf) {
      code = c & 0x1fu;
      length = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
      code = c & 0x0fu;
      length = 3;
    } else if (c >= 0xf0 && c <= 0xf4) {
      code = c & 0x07u;
      length = 4;
    } else {
      return false;
    }
    if (i + length > text.size()) return false;
    for (std::size_t k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xc0u) != 0x80u) return false;
      code = (code << 6) | (next & 0x3fu);
    }
    const bool overlong =
        (length == 3 && code < 0x800) || (length == 4 && (code < 0x10000 || code > 0x10ffff));
    if (overlong || (code >= 0xd800 && code <= 0xdfff)) return false;
    if (code < 0x20 || (code >= 0x7f && code <= 0x9f)) return false;
    i += length;
  }
  return true;
}

// A few cycles' wait between two tries of a slot: the writer holds it odd for the nanoseconds of
// one update. A pause instruction, not a yield: the scrape keeps its CPU.
void pause_briefly() {
  for (int i = 0; i < 16; ++i) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield" ::: "memory");
#else
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
#endif
  }
}

// One seqlock try: true when seq was even and unchanged across the copy.
bool try_read_slot(const hwperf_region_slot& slot, std::uint32_t events, SlotValues& out) {
  const std::uint32_t before = load_acquire(&slot.seq);
  if ((before & 1u) != 0) return false;
  out.region = load(&slot.region);
  out.tid = load(&slot.tid);
  out.cpu = load(&slot.cpu);
  out.calls = load(&slot.calls);
  out.time_ns = load(&slot.time_ns);
  for (std::uint32_t e = 0; e < events; ++e) out.counts[e] = load(&slot.counts[e]);
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  return load(&slot.seq) == before;
}

std::string hex(std::uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%016llx", static_cast<unsigned long long>(value));
  return text;
}

ReadResult refuse(Problem problem, std::string reason) {
  ReadResult result;
  result.problem = problem;
  result.reason = std::move(reason);
  return result;
}

// [offset, offset + count * size) inside [0, segment) and 64-byte aligned, without overflow.
std::string array_problem(const char* what, std::uint64_t offset, std::uint64_t count,
                          std::uint64_t size, std::uint64_t header, std::uint64_t segment) {
  const std::string name = std::string(what) + " at " + std::to_string(offset);
  if (offset % 64 != 0) return name + ": not 64-byte aligned";
  if (offset < header) return name + ": inside the header (" + std::to_string(header) + " bytes)";
  if (offset > segment) return name + ": past the end (" + std::to_string(segment) + " bytes)";
  // count <= 4096 and size <= 104: no overflow in the product; offset <= segment above.
  if (count * size > segment - offset) {
    return name + ": " + std::to_string(count) + " of " + std::to_string(size) +
           " bytes end past the segment (" + std::to_string(segment) + " bytes)";
  }
  return "";
}

bool same_identity(const SlotValues& a, const SlotValues& b) {
  return a.region == b.region && a.tid == b.tid && a.cpu == b.cpu;
}

bool went_backwards(const SlotValues& now, const SlotValues& before) {
  if (now.calls < before.calls || now.time_ns < before.time_ns) return true;
  for (std::size_t e = 0; e < now.counts.size(); ++e) {
    if (now.counts[e] < before.counts[e]) return true;
  }
  return false;
}

bool same_events(const std::vector<SegmentEvent>& a, const std::vector<SegmentEvent>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t e = 0; e < a.size(); ++e) {
    if (a[e].type != b[e].type || a[e].config != b[e].config || a[e].config1 != b[e].config1 ||
        a[e].config2 != b[e].config2 || a[e].exclude_kernel != b[e].exclude_kernel) {
      return false;
    }
  }
  return true;
}

}  // namespace

namespace {

// What a checked header says: the arrays' bounds and places.
struct Layout {
  std::uint32_t event_count = 0, max_regions = 0, max_slots = 0;
  std::uint32_t region_count = 0, slot_count = 0;
  std::uint64_t names_offset = 0, slots_offset = 0;
};

// Alignment, size, state, magic, version, header_size and segment_size; ok or the refusal.
ReadResult check_identity(const unsigned char* data, std::size_t size) {
  constexpr std::size_t header_bytes = sizeof(hwperf_region_header);
  if (reinterpret_cast<std::uintptr_t>(data) % 8 != 0) {
    return refuse(Problem::bad_header, "the segment is not 8-byte aligned in memory");
  }
  if (size < header_bytes) {
    return refuse(Problem::truncated, "truncated: " + std::to_string(size) +
                                          " bytes, a header needs " + std::to_string(header_bytes));
  }
  const auto& header = *reinterpret_cast<const hwperf_region_header*>(data);
  // State first, with acquire: until READY the creator may still be writing every other field.
  const std::uint32_t state = load_acquire(&header.state);
  if (state == HWPERF_REGION_STATE_CREATED) {
    return refuse(Problem::not_ready, "the header is still being written (state CREATED)");
  }
  const std::uint64_t magic = load(&header.magic);
  if (magic != HWPERF_REGION_MAGIC) {
    return refuse(Problem::bad_magic, "bad magic " + hex(magic) + " (a segment starts with " +
                                          hex(HWPERF_REGION_MAGIC) + ", \"HWPREG01\")");
  }
  if (state != HWPERF_REGION_STATE_READY) {
    return refuse(Problem::bad_header, "unknown state " + std::to_string(state));
  }
  const std::uint32_t version = load(&header.version);
  if (version != HWPERF_REGION_VERSION) {
    return refuse(Problem::bad_version, "version " + std::to_string(version) +
                                            " not supported (this exporter reads version " +
                                            std::to_string(HWPERF_REGION_VERSION) + ")");
  }
  const std::uint32_t header_size = load(&header.header_size);
  if (header_size != header_bytes) {
    return refuse(Problem::bad_header, "header_size " + std::to_string(header_size) +
                                           ", version 1 has " + std::to_string(header_bytes));
  }
  const std::uint64_t segment_size = load(&header.segment_size);
  if (segment_size != size) {
    return refuse(Problem::truncated, (segment_size > size ? "truncated: " : "size mismatch: ") +
                                          std::to_string(size) + " bytes, header says " +
                                          std::to_string(segment_size));
  }
  return {};
}

// The counts against the layout's bounds, the arrays inside the segment and apart; fills
// `layout`, or returns the refusal.
ReadResult check_arrays(const hwperf_region_header& header, std::size_t size, Layout& layout) {
  layout.event_count = load(&header.event_count);
  layout.max_regions = load(&header.max_regions);
  layout.max_slots = load(&header.max_slots);
  struct Bound {
    const char* name;
    std::uint32_t value, limit;
  };
  for (const Bound& bound : {Bound{"event_count", layout.event_count, HWPERF_REGION_MAX_EVENTS},
                             Bound{"max_regions", layout.max_regions, HWPERF_REGION_MAX_REGIONS},
                             Bound{"max_slots", layout.max_slots, HWPERF_REGION_MAX_SLOTS}}) {
    if (bound.value > bound.limit) {
      return refuse(Problem::bad_bounds, std::string(bound.name) + " " +
                                             std::to_string(bound.value) + " above the limit " +
                                             std::to_string(bound.limit));
    }
  }
  const std::uint64_t names = layout.names_offset = load(&header.names_offset);
  const std::uint64_t slots = layout.slots_offset = load(&header.slots_offset);
  constexpr std::size_t header_bytes = sizeof(hwperf_region_header);
  for (const std::string& problem :
       {array_problem("names", names, layout.max_regions, sizeof(hwperf_region_name), header_bytes,
                      size),
        array_problem("slots", slots, layout.max_slots, sizeof(hwperf_region_slot), header_bytes,
                      size)}) {
    if (!problem.empty()) return refuse(Problem::bad_offsets, problem);
  }
  const std::uint64_t names_end =
      names + std::uint64_t{layout.max_regions} * sizeof(hwperf_region_name);
  const std::uint64_t slots_end =
      slots + std::uint64_t{layout.max_slots} * sizeof(hwperf_region_slot);
  if (names < slots_end && slots < names_end && layout.max_regions > 0 && layout.max_slots > 0) {
    return refuse(Problem::bad_offsets, "names [" + std::to_string(names) + ", " +
                                            std::to_string(names_end) + ") overlap slots [" +
                                            std::to_string(slots) + ", " +
                                            std::to_string(slots_end) + ")");
  }
  // Slots before names: a slot names only a region published before it, so every region a slot
  // read here names is below the region_count read after it.
  layout.slot_count = load_acquire(&header.slot_count);
  layout.region_count = load_acquire(&header.region_count);
  if (layout.region_count > layout.max_regions) {
    return refuse(Problem::bad_bounds, "region_count " + std::to_string(layout.region_count) +
                                           " above max_regions " +
                                           std::to_string(layout.max_regions));
  }
  if (layout.slot_count > layout.max_slots) {
    return refuse(Problem::bad_bounds, "slot_count " + std::to_string(layout.slot_count) +
                                           " above max_slots " + std::to_string(layout.max_slots));
  }
  return {};
}

void read_events(const hwperf_region_header& header, std::uint32_t count, Snapshot& snapshot) {
  for (std::uint32_t e = 0; e < count; ++e) {
    const hwperf_region_event& event = header.events[e];
    SegmentEvent copy;
    copy.type = load(&event.type);
    copy.exclude_kernel = load(&event.exclude_kernel) != 0;
    copy.config = load(&event.config);
    copy.config1 = load(&event.config1);
    copy.config2 = load(&event.config2);
    bool terminated = false;
    copy.name = copy_name(event.name, terminated);
    if (!terminated || !printable_utf8(copy.name)) copy.name = "?";
    snapshot.events.push_back(std::move(copy));
  }
}

void read_names(const hwperf_region_name* names, std::uint32_t count, Snapshot& snapshot) {
  std::set<std::string> seen;
  for (std::uint32_t r = 0; r < count; ++r) {
    bool terminated = false;
    std::string name = copy_name(names[r].name, terminated);
    std::string why;
    if (!terminated) {
      why = "not NUL-terminated within " + std::to_string(HWPERF_REGION_NAME_BYTES) + " bytes";
    } else if (name.empty()) {
      why = "empty";
    } else if (!printable_utf8(name)) {
      why = "not printable UTF-8";
    } else if (!seen.insert(name).second) {
      why = "a duplicate of an earlier region's name";
    }
    if (why.empty()) {
      snapshot.regions.emplace_back(std::move(name));
    } else {
      snapshot.regions.emplace_back(std::nullopt);
      snapshot.notes.push_back("region " + std::to_string(r) + " refused: name " + why);
    }
  }
}

// Every slot within the limits, from `first_slot` on; ok, or the refusal of a slot naming a
// region not published.
ReadResult read_slots(const hwperf_region_slot* slots, const Layout& layout,
                      const ReadLimits& limits, std::uint32_t first_slot, Snapshot& snapshot) {
  snapshot.slots.resize(layout.slot_count);
  unsigned failed = 0;
  for (std::uint32_t i = 0; i < layout.slot_count; ++i) {
    const std::uint32_t s = (first_slot + i) % layout.slot_count;
    if (failed >= limits.failed_tries) {
      if (snapshot.unread_slots++ == 0) snapshot.next_slot = s;
      continue;
    }
    SlotValues values;
    bool read = false;
    for (unsigned t = 0; t < limits.tries_per_slot && !read && failed < limits.failed_tries; ++t) {
      if (t > 0) pause_briefly();
      read = try_read_slot(slots[s], layout.event_count, values);
      if (!read) ++failed;
    }
    if (!read) {
      ++snapshot.torn_slots;
      continue;
    }
    if (values.region >= layout.region_count) {
      return refuse(Problem::bad_slot, "slot " + std::to_string(s) + " names region " +
                                           std::to_string(values.region) + " of " +
                                           std::to_string(layout.region_count));
    }
    if (snapshot.regions[values.region]) snapshot.slots[s] = values;
  }
  if (snapshot.torn_slots > 0) {
    // One text for any number, so that it is logged once: the metric has the numbers.
    snapshot.notes.push_back("slots skipped: the writer kept them odd or changing");
  }
  return {};
}

}  // namespace

ReadResult read_segment(const unsigned char* data, std::size_t size, const ReadLimits& limits,
                        std::uint32_t first_slot) {
  if (ReadResult refused = check_identity(data, size); !refused.ok()) return refused;
  const auto& header = *reinterpret_cast<const hwperf_region_header*>(data);
  Layout layout;
  if (ReadResult refused = check_arrays(header, size, layout); !refused.ok()) return refused;
  ReadResult result;
  Snapshot& snapshot = result.snapshot;
  snapshot.writer_pid = load(&header.writer_pid);
  snapshot.dropped = load(&header.dropped);
  read_events(header, layout.event_count, snapshot);
  read_names(reinterpret_cast<const hwperf_region_name*>(data + layout.names_offset),
             layout.region_count, snapshot);
  const auto* slots = reinterpret_cast<const hwperf_region_slot*>(data + layout.slots_offset);
  if (ReadResult refused = read_slots(slots, layout, limits, first_slot, snapshot); !refused.ok()) {
    return refused;
  }
  return result;
}

ReadResult SegmentReader::read(const unsigned char* data, std::size_t size,
                               const ReadLimits& limits) {
  return merge(read_segment(data, size, limits, next_slot()));
}

ReadResult SegmentReader::merge(ReadResult fresh) {
  if (!fresh.ok()) return fresh;
  Snapshot& now = fresh.snapshot;
  if (!last_) {
    last_ = std::make_shared<const Snapshot>(now);
    return fresh;
  }
  const Snapshot& last = *last_;
  if (!same_events(now.events, last.events)) {
    return refuse(Problem::bad_header, "the event table changed since the last read");
  }
  if (now.regions.size() < last.regions.size()) now.regions.resize(last.regions.size());
  for (std::size_t r = 0; r < last.regions.size(); ++r) {
    if (last.regions[r] && now.regions[r] != last.regions[r]) {
      now.notes.push_back("region " + std::to_string(r) + " renamed from \"" + *last.regions[r] +
                          "\": keeping the name first read");
      now.regions[r] = last.regions[r];
    }
  }
  if (now.slots.size() < last.slots.size()) now.slots.resize(last.slots.size());
  for (std::size_t s = 0; s < last.slots.size(); ++s) {
    const auto& before = last.slots[s];
    auto& slot = now.slots[s];
    if (!before) continue;
    if (!slot) {
      slot = before;
    } else if (!same_identity(*slot, *before) || went_backwards(*slot, *before)) {
      ++backwards_;
      now.notes.push_back("slot " + std::to_string(s) +
                          ": counts went backwards (or its region, thread or CPU changed): "
                          "keeping the previous values");
      slot = before;
    }
  }
  last_ = std::make_shared<const Snapshot>(now);
  return fresh;
}

}  // namespace hwperf::region
