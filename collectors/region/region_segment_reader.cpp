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

// A table's refusal, `check` one of hwperf_region_check's four for the names or the slots, with
// its numbers.
std::string table_problem(hwperf_region_check_result check, const hwperf_region_fields& f,
                          std::uint64_t segment) {
  const bool names = check <= HWPERF_REGION_CHECK_NAMES_OVERRUN;
  const std::uint64_t offset = names ? f.names_offset : f.slots_offset;
  const std::uint64_t count = names ? f.max_regions : f.max_slots;
  const std::uint64_t size = names ? sizeof(hwperf_region_name) : sizeof(hwperf_region_slot);
  const std::string name = std::string(names ? "names" : "slots") + " at " + std::to_string(offset);
  switch (check -
          (names ? HWPERF_REGION_CHECK_NAMES_ALIGNMENT : HWPERF_REGION_CHECK_SLOTS_ALIGNMENT)) {
    case 0: return name + ": not " + std::to_string(HWPERF_REGION_ALIGN) + "-byte aligned";
    case 1:
      return name + ": inside the header (" + std::to_string(sizeof(hwperf_region_header)) +
             " bytes)";
    case 2: return name + ": past the end (" + std::to_string(segment) + " bytes)";
    default:
      return name + ": " + std::to_string(count) + " of " + std::to_string(size) +
             " bytes end past the segment (" + std::to_string(segment) + " bytes)";
  }
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

// The header's fields, each loaded once: state first with acquire (until READY the creator may
// still be writing every other field), slot_count before region_count, both with acquire, last
// (a slot names only a region published before it, so every region a slot read here names is
// below the region_count read after it).
hwperf_region_fields load_fields(const hwperf_region_header& h) {
  // A braced list is evaluated in order, as the fields are declared.
  return {load_acquire(&h.state),
          load(&h.magic),
          load(&h.version),
          load(&h.header_size),
          load(&h.segment_size),
          load(&h.event_count),
          load(&h.max_regions),
          load(&h.max_slots),
          load(&h.names_offset),
          load(&h.slots_offset),
          load_acquire(&h.slot_count),
          load_acquire(&h.region_count)};
}

// Why a header that fails hwperf_region_check is refused, as the problem and its numbers.
ReadResult refusal(hwperf_region_check_result check, const hwperf_region_fields& f,
                   std::uint64_t size) {
  constexpr std::size_t header_bytes = sizeof(hwperf_region_header);
  const auto above = [](const char* what, std::uint32_t value, std::uint32_t limit) {
    return refuse(Problem::bad_bounds, std::string(what) + " " + std::to_string(value) +
                                           " above the limit " + std::to_string(limit));
  };
  switch (check) {
    case HWPERF_REGION_CHECK_OK: return {};
    case HWPERF_REGION_CHECK_NOT_READY:
      return refuse(Problem::not_ready, "the header is still being written (state CREATED)");
    case HWPERF_REGION_CHECK_MAGIC:
      return refuse(Problem::bad_magic, "bad magic " + hex(f.magic) + " (a segment starts with " +
                                            hex(HWPERF_REGION_MAGIC) + ", \"HWPREG01\")");
    case HWPERF_REGION_CHECK_STATE:
      return refuse(Problem::bad_header, "unknown state " + std::to_string(f.state));
    case HWPERF_REGION_CHECK_VERSION:
      return refuse(Problem::bad_version, "version " + std::to_string(f.version) +
                                              " not supported (this exporter reads version " +
                                              std::to_string(HWPERF_REGION_VERSION) + ")");
    case HWPERF_REGION_CHECK_HEADER_SIZE:
      return refuse(Problem::bad_header, "header_size " + std::to_string(f.header_size) +
                                             ", version 1 has " + std::to_string(header_bytes));
    case HWPERF_REGION_CHECK_SEGMENT_SIZE:
      return refuse(Problem::truncated,
                    (f.segment_size > size ? "truncated: " : "size mismatch: ") +
                        std::to_string(size) + " bytes, header says " +
                        std::to_string(f.segment_size));
    case HWPERF_REGION_CHECK_EVENT_COUNT:
      return above("event_count", f.event_count, HWPERF_REGION_MAX_EVENTS);
    case HWPERF_REGION_CHECK_MAX_REGIONS:
      return above("max_regions", f.max_regions, HWPERF_REGION_MAX_REGIONS);
    case HWPERF_REGION_CHECK_MAX_SLOTS:
      return above("max_slots", f.max_slots, HWPERF_REGION_MAX_SLOTS);
    case HWPERF_REGION_CHECK_NAMES_ALIGNMENT:
    case HWPERF_REGION_CHECK_NAMES_IN_HEADER:
    case HWPERF_REGION_CHECK_NAMES_PAST_END:
    case HWPERF_REGION_CHECK_NAMES_OVERRUN:
    case HWPERF_REGION_CHECK_SLOTS_ALIGNMENT:
    case HWPERF_REGION_CHECK_SLOTS_IN_HEADER:
    case HWPERF_REGION_CHECK_SLOTS_PAST_END:
    case HWPERF_REGION_CHECK_SLOTS_OVERRUN:
      return refuse(Problem::bad_offsets, table_problem(check, f, size));
    case HWPERF_REGION_CHECK_OVERLAP: {
      const std::uint64_t names_end =
          f.names_offset + std::uint64_t{f.max_regions} * sizeof(hwperf_region_name);
      const std::uint64_t slots_end =
          f.slots_offset + std::uint64_t{f.max_slots} * sizeof(hwperf_region_slot);
      return refuse(Problem::bad_offsets, "names [" + std::to_string(f.names_offset) + ", " +
                                              std::to_string(names_end) + ") overlap slots [" +
                                              std::to_string(f.slots_offset) + ", " +
                                              std::to_string(slots_end) + ")");
    }
    case HWPERF_REGION_CHECK_REGION_COUNT:
      return refuse(Problem::bad_bounds, "region_count " + std::to_string(f.region_count) +
                                             " above max_regions " + std::to_string(f.max_regions));
    case HWPERF_REGION_CHECK_SLOT_COUNT:
      return refuse(Problem::bad_bounds, "slot_count " + std::to_string(f.slot_count) +
                                             " above max_slots " + std::to_string(f.max_slots));
  }
  return refuse(Problem::bad_header,
                "refused (check " + std::to_string(static_cast<int>(check)) + ")");
}

// The mapping's own alignment and size, then the header's fields by the segment's rules
// (hwperf_region_check, which the writer applies too); ok or the refusal, `fields` filled.
ReadResult check_header(const unsigned char* data, std::size_t size, hwperf_region_fields& fields) {
  constexpr std::size_t header_bytes = sizeof(hwperf_region_header);
  if (reinterpret_cast<std::uintptr_t>(data) % 8 != 0) {
    return refuse(Problem::bad_header, "the segment is not 8-byte aligned in memory");
  }
  if (size < header_bytes) {
    return refuse(Problem::truncated, "truncated: " + std::to_string(size) +
                                          " bytes, a header needs " + std::to_string(header_bytes));
  }
  fields = load_fields(*reinterpret_cast<const hwperf_region_header*>(data));
  return refusal(hwperf_region_check(&fields, size), fields, size);
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
ReadResult read_slots(const hwperf_region_slot* slots, const hwperf_region_fields& layout,
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
  hwperf_region_fields layout{};
  if (ReadResult refused = check_header(data, size, layout); !refused.ok()) return refused;
  const auto& header = *reinterpret_cast<const hwperf_region_header*>(data);
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
