/* The shared-memory segment through which libhwperf_markers (the writer, inside the measured
 * program) publishes per-region counts to hwperf_exporter (the reader). Plain C, fixed-width
 * types, no pointers: the reader maps it read-only and treats every byte as untrusted.
 *
 * Layout (all offsets from the start of the segment, all integers little-endian host order):
 *   hwperf_region_header                       at 0
 *   hwperf_region_name[max_regions]            at header.names_offset
 *   hwperf_region_slot[max_slots]              at header.slots_offset
 * The segment is a sealed memfd (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) whose size is
 * header.segment_size, so the reader's mapping can never lose pages under it. Its rules live here
 * once, below the types: the layout a creator gives it (hwperf_region_layout) and the checks both
 * the writer, before its first write, and the reader, before every read, make of a header
 * (hwperf_region_check).
 *
 * Who writes what:
 *   - The creator (the exporter for `-- CMD`, or the library when the program was started
 *     elsewhere) writes the header and the event table once, then sets header.state to
 *     HWPERF_REGION_STATE_READY with release ordering. The library counts only after it sees READY.
 *   - The library appends region names (name first, then region_count, release) and slots
 *     (slot body with an odd seq, then slot_count, release); it never removes either. Appends
 *     take turns: the threads of a process under a mutex, the processes that share a segment
 *     (it is inherited across fork and exec: a wrapper and the program it executes, a shell's
 *     children) under a POSIX write lock (fcntl F_SETLKW) on the segment's first byte.
 *   - Each slot is written by one thread only, under its seq counter (a seqlock): seq is odd while
 *     the slot changes; a reader copies the slot and keeps the copy only if seq was even and
 *     unchanged across the copy.
 */
#ifndef HWPERF_REGION_SEGMENT_H
#define HWPERF_REGION_SEGMENT_H

#include <stdint.h>

#define HWPERF_REGION_MAGIC UINT64_C(0x3130474552505748) /* "HWPREG01" read as bytes */
#define HWPERF_REGION_VERSION 1u

#define HWPERF_REGION_MAX_EVENTS 8u
#define HWPERF_REGION_NAME_BYTES 64u /* including the terminating NUL */
#define HWPERF_REGION_MAX_REGIONS 256u
#define HWPERF_REGION_MAX_SLOTS 4096u

/* The memfd name the library gives a segment it creates itself (visible as
 * "/memfd:hwperf-regions (deleted)" under /proc/PID/fd). */
#define HWPERF_REGION_MEMFD_NAME "hwperf-regions"
/* Environment the exporter sets for `-- CMD`: the inherited fd of the segment it created. */
#define HWPERF_REGION_FD_ENV "HWPERF_REGIONS_FD"
/* Environment a user sets for a program started elsewhere: comma-separated perf event names the
 * library knows (task-clock, cpu-clock, page-faults, context-switches, cpu-migrations, cycles,
 * instructions, cache-references, cache-misses, branches, branch-misses). */
#define HWPERF_REGION_EVENTS_ENV "HWPERF_REGIONS_EVENTS"

enum hwperf_region_state {
  HWPERF_REGION_STATE_CREATED = 0, /* header being written */
  HWPERF_REGION_STATE_READY = 1    /* header and event table final */
};

/* One event the library opens per thread (perf_event_attr fields; the rest stay zero). */
struct hwperf_region_event {
  uint32_t type;           /* perf_event_attr.type */
  uint32_t exclude_kernel; /* 0 or 1 */
  uint64_t config;
  uint64_t config1;
  uint64_t config2;
  char name[HWPERF_REGION_NAME_BYTES]; /* informational; the reader matches on type and configs */
};

struct hwperf_region_header {
  uint64_t magic;
  uint32_t version;
  uint32_t header_size;  /* sizeof(struct hwperf_region_header) */
  uint64_t segment_size; /* the whole segment, in bytes */
  uint32_t state;        /* enum hwperf_region_state; written last by the creator */
  uint32_t writer_pid;   /* the process that attached last (behind a wrapper, the program) */
  uint32_t event_count;  /* <= HWPERF_REGION_MAX_EVENTS */
  uint32_t max_regions;  /* <= HWPERF_REGION_MAX_REGIONS */
  uint32_t max_slots;    /* <= HWPERF_REGION_MAX_SLOTS */
  uint32_t region_count; /* names published, <= max_regions */
  uint32_t slot_count;   /* slots published, <= max_slots */
  uint32_t dropped;      /* begin calls not counted: table full, nesting too deep, events failed */
  uint64_t names_offset; /* of hwperf_region_name[max_regions] */
  uint64_t slots_offset; /* of hwperf_region_slot[max_slots] */
  uint64_t time_origin_ns; /* CLOCK_MONOTONIC when the library last attached */
  struct hwperf_region_event events[HWPERF_REGION_MAX_EVENTS];
};

struct hwperf_region_name {
  char name[HWPERF_REGION_NAME_BYTES]; /* NUL-terminated, never changed once published */
};

/* Accumulated over every completed begin/end pair of one region, on one thread, on one CPU
 * (the CPU the thread was on at the region's end). */
struct hwperf_region_slot {
  uint32_t seq;                              /* seqlock: odd while being written */
  uint32_t region;                           /* index into the name table */
  int32_t tid;                               /* the thread's Linux TID */
  int32_t cpu;                               /* the CPU the counts are attributed to */
  uint64_t calls;                            /* completed begin/end pairs */
  uint64_t time_ns;                          /* CLOCK_MONOTONIC time inside the region */
  uint64_t counts[HWPERF_REGION_MAX_EVENTS]; /* per event of the header, scaled by neither */
};

/* Where the tables start and where the segment ends: each a multiple of HWPERF_REGION_ALIGN, so
 * that the header, the names and the slots never share a cache line (a slot is written on one CPU
 * while another reads the header). Both creators lay a segment out so, and both checks refuse any
 * other placement. */
#define HWPERF_REGION_ALIGN 64u

static inline uint64_t hwperf_region_align(uint64_t value) {
  return (value + (HWPERF_REGION_ALIGN - 1u)) & ~(uint64_t)(HWPERF_REGION_ALIGN - 1u);
}

/* The layout of a segment of `max_regions` names and `max_slots` slots: the header, then the names,
 * then the slots. Returns the segment's size. */
static inline uint64_t hwperf_region_layout(uint32_t max_regions, uint32_t max_slots,
                                            uint64_t* names_offset, uint64_t* slots_offset) {
  *names_offset = hwperf_region_align(sizeof(struct hwperf_region_header));
  *slots_offset = hwperf_region_align(*names_offset +
                                      (uint64_t)max_regions * sizeof(struct hwperf_region_name));
  return hwperf_region_align(*slots_offset +
                             (uint64_t)max_slots * sizeof(struct hwperf_region_slot));
}

/* A header's fields, each read once: the segment is another process's memory, so a reader copies
 * every field before it looks at it (state first, with acquire ordering; slot_count before
 * region_count, both with acquire, after the rest). */
struct hwperf_region_fields {
  uint32_t state;
  uint64_t magic;
  uint32_t version;
  uint32_t header_size;
  uint64_t segment_size;
  uint32_t event_count;
  uint32_t max_regions;
  uint32_t max_slots;
  uint64_t names_offset;
  uint64_t slots_offset;
  uint32_t slot_count;
  uint32_t region_count;
};

/* What a header can be refused for, in the order the checks are made. */
enum hwperf_region_check_result {
  HWPERF_REGION_CHECK_OK = 0,
  HWPERF_REGION_CHECK_NOT_READY,       /* state CREATED: the creator is still writing */
  HWPERF_REGION_CHECK_MAGIC,           /* not HWPERF_REGION_MAGIC */
  HWPERF_REGION_CHECK_STATE,           /* neither CREATED nor READY */
  HWPERF_REGION_CHECK_VERSION,         /* not HWPERF_REGION_VERSION */
  HWPERF_REGION_CHECK_HEADER_SIZE,     /* not sizeof(struct hwperf_region_header) */
  HWPERF_REGION_CHECK_SEGMENT_SIZE,    /* not the size of the segment as mapped */
  HWPERF_REGION_CHECK_EVENT_COUNT,     /* above HWPERF_REGION_MAX_EVENTS */
  HWPERF_REGION_CHECK_MAX_REGIONS,     /* above HWPERF_REGION_MAX_REGIONS */
  HWPERF_REGION_CHECK_MAX_SLOTS,       /* above HWPERF_REGION_MAX_SLOTS */
  HWPERF_REGION_CHECK_NAMES_ALIGNMENT, /* names_offset not a multiple of HWPERF_REGION_ALIGN */
  HWPERF_REGION_CHECK_NAMES_IN_HEADER, /* names_offset inside the header */
  HWPERF_REGION_CHECK_NAMES_PAST_END,  /* names_offset past the segment's end */
  HWPERF_REGION_CHECK_NAMES_OVERRUN,   /* the names end past the segment */
  HWPERF_REGION_CHECK_SLOTS_ALIGNMENT, /* likewise for the slots */
  HWPERF_REGION_CHECK_SLOTS_IN_HEADER,
  HWPERF_REGION_CHECK_SLOTS_PAST_END,
  HWPERF_REGION_CHECK_SLOTS_OVERRUN,
  HWPERF_REGION_CHECK_OVERLAP,      /* two tables that hold something share bytes */
  HWPERF_REGION_CHECK_REGION_COUNT, /* above max_regions */
  HWPERF_REGION_CHECK_SLOT_COUNT    /* above max_slots */
};

/* One table of `count` entries of `entry_size` bytes at `offset`: inside a segment of `size` bytes,
 * after the header, aligned. Returns 0, or the table's first failure as an offset from the names'
 * results (add HWPERF_REGION_CHECK_NAMES_ALIGNMENT or ..._SLOTS_ALIGNMENT). No overflow: count is
 * at most 2^32 and entry_size small, and offset <= size is checked before the end is. */
static inline int hwperf_region_check_table(uint64_t offset, uint64_t count, uint64_t entry_size,
                                            uint64_t size) {
  if (offset % HWPERF_REGION_ALIGN != 0) return 1;
  if (offset < sizeof(struct hwperf_region_header)) return 2;
  if (offset > size) return 3;
  if (count * entry_size > size - offset) return 4;
  return 0;
}

/* The first rule the header `f` of a segment mapped as `size` bytes breaks, or
 * HWPERF_REGION_CHECK_OK: what the writer checks before its first write and the reader before
 * every read, so that neither uses a segment the other refuses. */
static inline enum hwperf_region_check_result hwperf_region_check(
    const struct hwperf_region_fields* f, uint64_t size) {
  if (f->state == HWPERF_REGION_STATE_CREATED) return HWPERF_REGION_CHECK_NOT_READY;
  if (f->magic != HWPERF_REGION_MAGIC) return HWPERF_REGION_CHECK_MAGIC;
  if (f->state != HWPERF_REGION_STATE_READY) return HWPERF_REGION_CHECK_STATE;
  if (f->version != HWPERF_REGION_VERSION) return HWPERF_REGION_CHECK_VERSION;
  if (f->header_size != sizeof(struct hwperf_region_header)) return HWPERF_REGION_CHECK_HEADER_SIZE;
  if (f->segment_size != size) return HWPERF_REGION_CHECK_SEGMENT_SIZE;
  if (f->event_count > HWPERF_REGION_MAX_EVENTS) return HWPERF_REGION_CHECK_EVENT_COUNT;
  if (f->max_regions > HWPERF_REGION_MAX_REGIONS) return HWPERF_REGION_CHECK_MAX_REGIONS;
  if (f->max_slots > HWPERF_REGION_MAX_SLOTS) return HWPERF_REGION_CHECK_MAX_SLOTS;
  const int names = hwperf_region_check_table(f->names_offset, f->max_regions,
                                              sizeof(struct hwperf_region_name), size);
  if (names != 0)
    return (enum hwperf_region_check_result)(HWPERF_REGION_CHECK_NAMES_ALIGNMENT + names - 1);
  const int slots = hwperf_region_check_table(f->slots_offset, f->max_slots,
                                              sizeof(struct hwperf_region_slot), size);
  if (slots != 0)
    return (enum hwperf_region_check_result)(HWPERF_REGION_CHECK_SLOTS_ALIGNMENT + slots - 1);
  const uint64_t names_end =
      f->names_offset + (uint64_t)f->max_regions * sizeof(struct hwperf_region_name);
  const uint64_t slots_end =
      f->slots_offset + (uint64_t)f->max_slots * sizeof(struct hwperf_region_slot);
  if (f->max_regions > 0 && f->max_slots > 0 && f->names_offset < slots_end &&
      f->slots_offset < names_end) {
    return HWPERF_REGION_CHECK_OVERLAP;
  }
  if (f->region_count > f->max_regions) return HWPERF_REGION_CHECK_REGION_COUNT;
  if (f->slot_count > f->max_slots) return HWPERF_REGION_CHECK_SLOT_COUNT;
  return HWPERF_REGION_CHECK_OK;
}

#endif
