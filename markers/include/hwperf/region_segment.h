/* The shared-memory segment through which libhwperf_markers (the writer, inside the measured
 * program) publishes per-region counts to hwperf_exporter (the reader). Plain C, fixed-width
 * types, no pointers: the reader maps it read-only and treats every byte as untrusted.
 *
 * Layout (all offsets from the start of the segment, all integers little-endian host order):
 *   hwperf_region_header                       at 0
 *   hwperf_region_name[max_regions]            at header.names_offset
 *   hwperf_region_slot[max_slots]              at header.slots_offset
 * The segment is a sealed memfd (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) whose size is
 * header.segment_size, so the reader's mapping can never lose pages under it.
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

#endif
