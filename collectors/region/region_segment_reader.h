// Reads a region segment (markers/include/hwperf/region_segment.h) that a measured program
// writes while we read: untrusted input. Every field is checked before it is used, no count is
// trusted beyond the layout's bounds, no pointer is followed, and every byte is copied out with
// an atomic load (the writer changes the mapping concurrently). Pure: the caller hands in bytes
// it guarantees mapped; nothing here opens, maps or logs.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/enum_names.h"
#include "markers/include/hwperf/region_segment.h"

namespace hwperf::region {

// Why a segment cannot be read at all, as the `reason` label of hwperf_region_segment_valid
// (a handful of values: the numbers are in the log line and the text).
enum class Problem {
  none,
  not_ready,    // the creator has not finished the header yet
  bad_magic,    // not a segment, or scribbled on
  bad_version,  // a layout this exporter does not know
  bad_header,   // header_size or alignment
  truncated,    // segment_size is not what is mapped
  bad_bounds,   // a count beyond its limit
  bad_offsets,  // an array past the end, overlapping another, or misaligned
  bad_slot,     // a slot names a region that was not published
  not_found,    // (the collector's) no segment found for the process yet
  open_failed,  // (the collector's) found but refused or unreadable
};
inline constexpr EnumName<Problem> kProblemNames[] = {
    {Problem::none, "none"},
    {Problem::not_ready, "not_ready"},
    {Problem::bad_magic, "bad_magic"},
    {Problem::bad_version, "bad_version"},
    {Problem::bad_header, "bad_header"},
    {Problem::truncated, "truncated"},
    {Problem::bad_bounds, "bad_bounds"},
    {Problem::bad_offsets, "bad_offsets"},
    {Problem::bad_slot, "bad_slot"},
    {Problem::not_found, "not_found"},
    {Problem::open_failed, "open_failed"},
};
inline const char* to_string(Problem problem) { return name_of(kProblemNames, problem); }

// One event of the header's table, as the library was told to count it.
struct SegmentEvent {
  std::uint32_t type = 0;
  std::uint64_t config = 0;
  std::uint64_t config1 = 0;
  std::uint64_t config2 = 0;
  bool exclude_kernel = false;
  std::string name;  // informational only: printable or replaced by "?"
};

// A (region, thread, CPU) accumulation. counts holds one value per event of the header, in its
// order, and zeros past them: a fixed array, so that a snapshot of 4096 slots is one allocation.
struct SlotValues {
  std::uint32_t region = 0;
  std::int32_t tid = 0;
  std::int32_t cpu = 0;
  std::uint64_t calls = 0;
  std::uint64_t time_ns = 0;
  std::array<std::uint64_t, HWPERF_REGION_MAX_EVENTS> counts{};
};

struct Snapshot {
  std::uint32_t writer_pid = 0;
  std::uint32_t dropped = 0;  // begin calls the library could not count
  std::vector<SegmentEvent> events;
  // Index = region number. A name refused (not NUL-terminated within 64 bytes, empty, not
  // printable UTF-8, a duplicate) is nullopt, its reason in `notes`, and its slots left out.
  std::vector<std::optional<std::string>> regions;
  // Index = slot number; nullopt for a slot skipped this time (its seq stayed odd or kept
  // changing, the read's budget was spent before it, or its region's name was refused).
  std::vector<std::optional<SlotValues>> slots;
  std::size_t torn_slots = 0;      // skipped because the writer kept changing them
  std::size_t unread_slots = 0;    // not looked at: the read's budget of failed tries was spent
  std::uint32_t next_slot = 0;     // where the next read should start (after the unread ones)
  std::vector<std::string> notes;  // per refused name or slot: what and why
};

// What one read of a segment may spend on slots the writer holds: a scrape must not wait on a
// program. A slot gets `tries_per_slot` seqlock tries, a short CPU pause (no yield: on a busy
// machine a yield gives away a whole time slice) between them; once `failed_tries` tries of one
// read have failed, the slots left are not looked at (unread_slots) and keep their previous
// values. So a read copies each slot at most once plus `failed_tries` failed copies in all.
struct ReadLimits {
  unsigned tries_per_slot = 4;
  unsigned failed_tries = 256;
};

struct ReadResult {
  Problem problem = Problem::none;
  std::string reason;  // "bad magic 0x...", "truncated: 100 bytes mapped, header says 400000"
  Snapshot snapshot;   // meaningful only when problem == none
  bool ok() const { return problem == Problem::none; }
};

// One look at the segment in [data, data + size). `data` must be 8-byte aligned (a mapping is);
// anything else is refused as bad_header. Slots are read from `first_slot` on, wrapping around
// (so that slots left unread by a spent budget are read first next time).
ReadResult read_segment(const unsigned char* data, std::size_t size, const ReadLimits& limits = {},
                        std::uint32_t first_slot = 0);

// Successive reads of one segment, keeping each slot's counts from going backwards: a slot
// whose calls, time or any count is below what was read before, or whose region, thread or CPU
// changed, keeps its previous values (and a note says so); slots and names once read are kept
// when a later read no longer shows them. A segment that cannot be read at all returns the
// problem and forgets nothing.
class SegmentReader {
 public:
  // read_segment() from where the last read's budget ran out, then merge().
  ReadResult read(const unsigned char* data, std::size_t size, const ReadLimits& limits = {});
  // Folds a read_segment() result into what was read before; the merged snapshot is returned and
  // kept as last(). The caller may take the fresh read without any lock and merge under one.
  ReadResult merge(ReadResult fresh);
  // The last merged snapshot (nullptr before the first valid read), shared: not copied per
  // scrape.
  std::shared_ptr<const Snapshot> last() const { return last_; }
  std::uint32_t next_slot() const { return last_ ? last_->next_slot : 0; }
  std::size_t backwards() const { return backwards_; }  // slot reads refused so far

 private:
  std::shared_ptr<const Snapshot> last_;
  std::size_t backwards_ = 0;
};

}  // namespace hwperf::region
