/* The region marker library: attach to (or create) the shared segment, count regions per thread
 * with the thread's own perf events, publish per (region, thread, CPU) slots under a seqlock.
 * The layout and the writer's duties are in hwperf/region_segment.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "hwperf/markers.h"
#include "hwperf/region_segment.h"
#include "markers_internal.h"

enum mode { MODE_UNTRIED = 0, MODE_COUNTING = 1, MODE_OFF = 2 };

/* MODE_COUNTING only after the segment is validated and the globals below are written; the hot
 * path reads it with acquire and then reads the globals without further synchronisation. */
static _Atomic int g_mode = MODE_UNTRIED;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static struct hwperf_region_header* g_header;
static struct hwperf_region_name* g_names;
static struct hwperf_region_slot* g_slots;
static uint32_t g_event_count;
static uint32_t g_max_regions;
static uint32_t g_max_slots;
static pthread_key_t g_thread_key;
/* Set once a thread was refused events counting the kernel too (perf_event_paranoid >= 2 for an
 * unprivileged user), so later threads ask for user space only at once. */
static _Atomic int g_user_only;

#define NAME_CACHE 32u /* per thread, direct-mapped by the name's address */
#define SLOT_CACHE 64u /* per thread, direct-mapped by (region, cpu) */
#define NO_REGION UINT32_MAX

struct frame {
  uint32_t region; /* NO_REGION: the begin was dropped, its end only pops */
  uint64_t start_ns;
  uint64_t start[HWPERF_REGION_MAX_EVENTS];
};

struct thread_state {
  int32_t tid;
  int leader;                                /* perf group leader fd, -1 when nothing opened */
  int fds[HWPERF_REGION_MAX_EVENTS];         /* -1 for events that failed to open */
  int value_index[HWPERF_REGION_MAX_EVENTS]; /* position in the group read, -1: not counted */
  unsigned depth;
  unsigned overflow; /* begins past the depth bound whose ends must be ignored */
  struct frame frames[HWPERF_MARKERS_MAX_DEPTH];
  struct {
    const char* name;
    uint32_t region;
  } names[NAME_CACHE];
  struct {
    uint32_t region; /* NO_REGION: empty */
    int32_t cpu;
    uint32_t slot;
  } slots[SLOT_CACHE];
};

/* initial-exec: one pointer, so the model fits the static TLS surplus even when the library is
 * dlopened; the hot path then costs a %fs-relative load instead of __tls_get_addr. */
static __thread struct thread_state* t_state __attribute__((tls_model("initial-exec")));

static uint64_t monotonic_ns(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (uint64_t)now.tv_sec * UINT64_C(1000000000) + (uint64_t)now.tv_nsec;
}

static void count_dropped(void) {
  atomic_fetch_add_explicit(A32(&g_header->dropped), 1u, memory_order_relaxed);
}

/* A child forked without exec stops counting: its one thread carries the forking thread's state
 * (TID, perf events that count the parent's thread) and perhaps a mutex another thread held at
 * the fork. An exec'd child starts afresh from its environment. */
static void after_fork_in_child(void) {
  atomic_store_explicit(&g_mode, MODE_OFF, memory_order_relaxed);
}

static void close_thread_events(struct thread_state* ts) {
  for (uint32_t i = 0; i < HWPERF_REGION_MAX_EVENTS; ++i) {
    if (ts->fds[i] >= 0) close(ts->fds[i]);
    ts->fds[i] = -1;
    ts->value_index[i] = -1;
  }
  ts->leader = -1;
}

static void thread_ended(void* value) {
  struct thread_state* ts = value;
  close_thread_events(ts);
  if (t_state == ts) t_state = NULL;
  free(ts);
}

static void attach(void) {
  struct hwperf_region_header* header = NULL;
  const char* fd_text = getenv(HWPERF_REGION_FD_ENV);
  const char* events = getenv(HWPERF_REGION_EVENTS_ENV);
  if (fd_text != NULL && *fd_text != '\0') {
    header = hwperf_markers_map_inherited(fd_text);
  } else if (events != NULL) {
    header = hwperf_markers_create_segment(events);
  }
  if (header == NULL || pthread_key_create(&g_thread_key, thread_ended) != 0) {
    atomic_store_explicit(&g_mode, MODE_OFF, memory_order_release);
    return;
  }
  pthread_atfork(NULL, NULL, after_fork_in_child);
  g_header = header;
  g_names = (struct hwperf_region_name*)(void*)((char*)header + header->names_offset);
  g_slots = (struct hwperf_region_slot*)(void*)((char*)header + header->slots_offset);
  g_event_count = header->event_count;
  g_max_regions = header->max_regions;
  g_max_slots = header->max_slots;
  atomic_store_explicit(A32(&header->writer_pid), (uint32_t)getpid(), memory_order_relaxed);
  atomic_store_explicit(A64(&header->time_origin_ns), monotonic_ns(), memory_order_relaxed);
  atomic_store_explicit(&g_mode, MODE_COUNTING, memory_order_release);
}

/* At load, so that a self-created segment exists (and writer_pid is set) before the first region:
 * the exporter can find the program as soon as it starts. */
__attribute__((constructor)) static void attach_at_load(void) { pthread_once(&g_once, attach); }

static inline int counting(void) {
  int mode = atomic_load_explicit(&g_mode, memory_order_acquire);
  if (__builtin_expect(mode == MODE_UNTRIED, 0)) {
    pthread_once(&g_once, attach);
    mode = atomic_load_explicit(&g_mode, memory_order_acquire);
  }
  return mode == MODE_COUNTING;
}

/* ---- per-thread perf events ---------------------------------------------------------------- */

/* The leader (leader < 0) is opened disabled; its members follow it. */
static int open_event(const struct hwperf_region_event* event, int leader, int exclude_kernel) {
  struct perf_event_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = event->type;
  attr.config = event->config;
  attr.config1 = event->config1;
  attr.config2 = event->config2;
  attr.read_format =
      PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
  if (leader < 0) attr.disabled = 1;
  attr.exclude_kernel = exclude_kernel ? 1u : 0u;
  attr.exclude_hv = exclude_kernel ? 1u : 0u;
  return (int)syscall(SYS_perf_event_open, &attr, 0 /* this thread */, -1 /* any CPU */, leader,
                      PERF_FLAG_FD_CLOEXEC);
}

/* Opens what it can: the first event that opens leads the group, the others join it. An event
 * the kernel refuses is left at 0 for this thread (calls and time still count, and dropped is not
 * bumped for it: the begin was counted).
 *
 * The leader is opened disabled and the group enabled once every member is in, as perf stat and
 * collectors/perf do: a member that joins a group already counting on the calling thread is not
 * scheduled in until the thread is next switched out and in, so a page-faults member behind a
 * task-clock leader counted nothing before the thread's first context switch (issue 35: 560 of
 * 624 faults). In Linux's kernel/events/core.c (6.12 on), __perf_install_in_context() reschedules
 * only the new event's PMU when the task is the current one (ctx_resched() with
 * event->pmu_ctx->pmu, commit 2d17cf1abcbe "perf: Optimize context reschedule for single PMU
 * cases"); a software member of a software-led group keeps a PMU context of its own (page-faults
 * is perf_swevent, task-clock perf_task_clock: perf_event_open() moves only a software member of a
 * hardware group onto its leader's PMU), while a group is kept and scheduled in under its leader's
 * PMU (perf_event_groups_cmp() orders groups by the leader's pmu_ctx->pmu, since 6.2's "perf:
 * Rewrite core context handling"). Enabling the leader reschedules the leader's PMU, and
 * group_sched_in() then adds every member. */
static void open_thread_events(struct thread_state* ts) {
  int next_index = 0;
  for (uint32_t i = 0; i < g_event_count; ++i) {
    const struct hwperf_region_event* event = &g_header->events[i];
    int user_only =
        event->exclude_kernel != 0 || atomic_load_explicit(&g_user_only, memory_order_relaxed) != 0;
    int fd = open_event(event, ts->leader, user_only);
    if (fd < 0 && !user_only && (errno == EACCES || errno == EPERM)) {
      fd = open_event(event, ts->leader, 1);
      if (fd >= 0) atomic_store_explicit(&g_user_only, 1, memory_order_relaxed);
    }
    if (fd < 0) continue;
    if (ts->leader < 0) ts->leader = fd;
    ts->fds[i] = fd;
    ts->value_index[i] = next_index++;
  }
  if (ts->leader >= 0 && ioctl(ts->leader, PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP) != 0) {
    close_thread_events(ts); /* a group that cannot start counts nothing, like a refused event */
  }
}

static struct thread_state* thread_state(void) {
  struct thread_state* ts = t_state;
  if (__builtin_expect(ts != NULL, 1)) return ts;
  ts = calloc(1, sizeof *ts);
  if (ts == NULL) return NULL;
  ts->tid = (int32_t)syscall(SYS_gettid);
  for (uint32_t i = 0; i < HWPERF_REGION_MAX_EVENTS; ++i) {
    ts->fds[i] = -1;
    ts->value_index[i] = -1;
  }
  ts->leader = -1;
  for (uint32_t i = 0; i < SLOT_CACHE; ++i) ts->slots[i].region = NO_REGION;
  open_thread_events(ts);
  pthread_setspecific(g_thread_key, ts);
  t_state = ts;
  return ts;
}

/* One read() of the whole group: { nr, time_enabled, time_running, value[nr] } for
 * PERF_FORMAT_GROUP with both TOTAL_TIME flags and no ID (include/uapi/linux/perf_event.h, the
 * read_format comment). */
static void read_events(const struct thread_state* ts, uint64_t* values) {
  uint64_t buffer[3 + HWPERF_REGION_MAX_EVENTS];
  if (ts->leader < 0 || read(ts->leader, buffer, sizeof buffer) < (ssize_t)(3 * sizeof(uint64_t))) {
    memset(values, 0, HWPERF_REGION_MAX_EVENTS * sizeof *values);
    return;
  }
  for (uint32_t i = 0; i < g_event_count; ++i) {
    int index = ts->value_index[i];
    values[i] = index >= 0 && (uint64_t)index < buffer[0] ? buffer[3 + index] : 0;
  }
}

/* ---- names and slots ----------------------------------------------------------------------- */

/* `stored` is at most 63 bytes and NUL-terminated; `name` matches when its first 63 bytes do
 * (longer names are truncated on the way in). */
static int name_matches(const char* stored, const char* name) {
  for (unsigned i = 0; i + 1 < HWPERF_REGION_NAME_BYTES; ++i) {
    if (stored[i] != name[i]) return 0;
    if (stored[i] == '\0') return 1;
  }
  return 1;
}

static uint32_t find_name(const char* name) {
  uint32_t count = atomic_load_explicit(A32(&g_header->region_count), memory_order_acquire);
  if (count > g_max_regions) count = g_max_regions;
  for (uint32_t i = 0; i < count; ++i) {
    if (name_matches(g_names[i].name, name)) return i;
  }
  return NO_REGION;
}

/* The region index for `name`, appending it when `create`; NO_REGION when unknown or full. */
static uint32_t region_of(struct thread_state* ts, const char* name, int create) {
  unsigned cache = (unsigned)(((uintptr_t)name >> 3) % NAME_CACHE);
  if (ts->names[cache].name == name && name_matches(g_names[ts->names[cache].region].name, name)) {
    return ts->names[cache].region;
  }
  uint32_t region = find_name(name);
  if (region == NO_REGION && create) {
    hwperf_markers_lock_appends();
    region = find_name(name);
    if (region == NO_REGION) {
      uint32_t count = atomic_load_explicit(A32(&g_header->region_count), memory_order_relaxed);
      if (count < g_max_regions) {
        char* stored = g_names[count].name;
        size_t length = strnlen(name, HWPERF_REGION_NAME_BYTES - 1);
        memcpy(stored, name, length);
        memset(stored + length, 0, HWPERF_REGION_NAME_BYTES - length);
        atomic_store_explicit(A32(&g_header->region_count), count + 1, memory_order_release);
        region = count;
      }
    }
    hwperf_markers_unlock_appends();
  }
  if (region != NO_REGION) {
    ts->names[cache].name = name;
    ts->names[cache].region = region;
  }
  return region;
}

static uint32_t find_slot(uint32_t region, int32_t tid, int32_t cpu) {
  uint32_t count = atomic_load_explicit(A32(&g_header->slot_count), memory_order_acquire);
  if (count > g_max_slots) count = g_max_slots;
  for (uint32_t i = 0; i < count; ++i) {
    const struct hwperf_region_slot* s = &g_slots[i];
    if (s->region == region && s->tid == tid && s->cpu == cpu) return i;
  }
  return NO_REGION;
}

/* The slot of (region, this thread, cpu), appended when new; NO_REGION when the table is full.
 * A slot found by scanning may be one a thread that ended left with the same TID: the kernel
 * reuses TIDs only after the old thread is gone, so it still has one writer. */
static uint32_t slot_of(struct thread_state* ts, uint32_t region, int32_t cpu) {
  unsigned cache = (region * 31u + (uint32_t)cpu) % SLOT_CACHE;
  if (ts->slots[cache].region == region && ts->slots[cache].cpu == cpu) {
    return ts->slots[cache].slot;
  }
  uint32_t slot = find_slot(region, ts->tid, cpu);
  if (slot == NO_REGION) {
    hwperf_markers_lock_appends();
    uint32_t count = atomic_load_explicit(A32(&g_header->slot_count), memory_order_relaxed);
    if (count < g_max_slots) {
      struct hwperf_region_slot* s = &g_slots[count];
      uint32_t seq = atomic_load_explicit(A32(&s->seq), memory_order_relaxed);
      seq += (seq & 1u) ? 2u : 1u; /* odd, whatever the segment held */
      atomic_store_explicit(A32(&s->seq), seq, memory_order_relaxed);
      atomic_thread_fence(memory_order_release);
      atomic_store_explicit(A32(&s->region), region, memory_order_relaxed);
      atomic_store_explicit(A32(&s->tid), (uint32_t)ts->tid, memory_order_relaxed);
      atomic_store_explicit(A32(&s->cpu), (uint32_t)cpu, memory_order_relaxed);
      atomic_store_explicit(A64(&s->calls), 0, memory_order_relaxed);
      atomic_store_explicit(A64(&s->time_ns), 0, memory_order_relaxed);
      for (uint32_t i = 0; i < HWPERF_REGION_MAX_EVENTS; ++i) {
        atomic_store_explicit(A64(&s->counts[i]), 0, memory_order_relaxed);
      }
      atomic_store_explicit(A32(&s->seq), seq + 1u, memory_order_release);
      atomic_store_explicit(A32(&g_header->slot_count), count + 1, memory_order_release);
      slot = count;
    }
    hwperf_markers_unlock_appends();
    if (slot == NO_REGION) return NO_REGION;
  }
  ts->slots[cache].region = region;
  ts->slots[cache].cpu = cpu;
  ts->slots[cache].slot = slot;
  return slot;
}

/* The seqlock writer (H.-J. Boehm, "Can seqlocks get along with programming language memory
 * models?", MSPC 2012, figure 6): odd seq, release fence, relaxed data stores, even seq with
 * release. Only this thread writes the slot, so its own relaxed loads of it are exact. */
static void add_to_slot(uint32_t slot, uint64_t calls, uint64_t time_ns, const uint64_t* deltas) {
  struct hwperf_region_slot* s = &g_slots[slot];
  uint32_t seq = atomic_load_explicit(A32(&s->seq), memory_order_relaxed);
  atomic_store_explicit(A32(&s->seq), seq + 1u, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  atomic_store_explicit(A64(&s->calls),
                        atomic_load_explicit(A64(&s->calls), memory_order_relaxed) + calls,
                        memory_order_relaxed);
  atomic_store_explicit(A64(&s->time_ns),
                        atomic_load_explicit(A64(&s->time_ns), memory_order_relaxed) + time_ns,
                        memory_order_relaxed);
  for (uint32_t i = 0; i < g_event_count; ++i) {
    atomic_store_explicit(
        A64(&s->counts[i]),
        atomic_load_explicit(A64(&s->counts[i]), memory_order_relaxed) + deltas[i],
        memory_order_relaxed);
  }
  atomic_store_explicit(A32(&s->seq), seq + 2u, memory_order_release);
}

/* Adds what `frame` counted up to (now, values) to this thread's slot on the current CPU. */
static int publish(struct thread_state* ts, const struct frame* frame, uint64_t now,
                   const uint64_t* values, uint64_t calls) {
  int cpu = sched_getcpu();
  uint32_t slot = slot_of(ts, frame->region, cpu < 0 ? -1 : cpu);
  if (slot == NO_REGION) {
    count_dropped();
    return 1;
  }
  uint64_t deltas[HWPERF_REGION_MAX_EVENTS];
  for (uint32_t i = 0; i < g_event_count; ++i) deltas[i] = values[i] - frame->start[i];
  add_to_slot(slot, calls, now - frame->start_ns, deltas);
  return 0;
}

/* ---- the API -------------------------------------------------------------------------------- */

int hwperf_markers_init(void) { return counting(); }

void hwperf_markers_close(void) {
  if (!counting()) return;
  struct thread_state* ts = t_state;
  if (ts == NULL) return;
  /* The thread's open regions end uncounted; its slots stay. */
  pthread_setspecific(g_thread_key, NULL);
  thread_ended(ts);
}

int hwperf_region_begin(const char* name) {
  if (!counting()) return 0;
  struct thread_state* ts = thread_state();
  if (ts == NULL || name == NULL) {
    count_dropped();
    return 1;
  }
  if (ts->depth == HWPERF_MARKERS_MAX_DEPTH) {
    ++ts->overflow;
    count_dropped();
    return 1;
  }
  struct frame* frame = &ts->frames[ts->depth++];
  frame->region = region_of(ts, name, 1);
  if (frame->region == NO_REGION) {
    count_dropped();
    return 1;
  }
  /* Last, so that the library's own work above is outside the region. */
  read_events(ts, frame->start);
  frame->start_ns = monotonic_ns();
  return 0;
}

/* The innermost open frame of `name`'s region (or of a dropped begin, when `name` has no region),
 * or -1. */
static int frame_of(const struct thread_state* ts, uint32_t region) {
  for (int i = (int)ts->depth - 1; i >= 0; --i) {
    if (ts->frames[i].region == region) return i;
  }
  return -1;
}

enum interval_end { ENDING, READING };

/* Closes the current interval of the open region `name`: at an end (its call is counted, the
 * regions opened inside it and never ended are abandoned with it) or at a read (what it counted
 * so far is published, and it counts on from here). */
static int close_interval(const char* name, enum interval_end how) {
  if (!counting()) return 0;
  struct thread_state* ts = t_state;
  if (ts == NULL || name == NULL) return 1;
  /* First, so that the library's own work below is outside the region. */
  uint64_t now = monotonic_ns();
  uint64_t values[HWPERF_REGION_MAX_EVENTS];
  read_events(ts, values);
  if (how == ENDING && ts->overflow > 0) {
    --ts->overflow;
    return 1;
  }
  uint32_t region = region_of(ts, name, 0);
  /* An end of a name without a region closes the innermost dropped begin; a read has nothing. */
  int index = how == READING && region == NO_REGION ? -1 : frame_of(ts, region);
  if (index < 0) return 1;
  struct frame* frame = &ts->frames[index];
  if (how == READING) {
    int dropped = publish(ts, frame, now, values, 0);
    memcpy(frame->start, values, sizeof frame->start);
    frame->start_ns = now;
    return dropped;
  }
  ts->depth = (unsigned)index;
  if (frame->region == NO_REGION) return 1;
  return publish(ts, frame, now, values, 1);
}

int hwperf_region_end(const char* name) { return close_interval(name, ENDING); }

int hwperf_region_read(const char* name) { return close_interval(name, READING); }

void hwperf_markers_register(const char* name) {
  if (!counting() || name == NULL) return;
  struct thread_state* ts = thread_state();
  if (ts != NULL && region_of(ts, name, 1) == NO_REGION) count_dropped();
}

/* For likwid_markerGetRegion: what this thread has accumulated for `name` over every CPU. */
int hwperf_markers_thread_totals(const char* name, uint64_t* calls, uint64_t* time_ns,
                                 uint64_t* counts, uint32_t* event_count) {
  *calls = 0;
  *time_ns = 0;
  *event_count = 0;
  if (!counting() || name == NULL) return 0;
  uint32_t region = find_name(name);
  *event_count = g_event_count;
  memset(counts, 0, HWPERF_REGION_MAX_EVENTS * sizeof *counts);
  struct thread_state* ts = t_state;
  if (region == NO_REGION || ts == NULL) return 1;
  uint32_t count = atomic_load_explicit(A32(&g_header->slot_count), memory_order_acquire);
  if (count > g_max_slots) count = g_max_slots;
  for (uint32_t i = 0; i < count; ++i) {
    const struct hwperf_region_slot* s = &g_slots[i];
    if (s->region != region || s->tid != ts->tid) continue;
    *calls += s->calls;
    *time_ns += s->time_ns;
    for (uint32_t e = 0; e < g_event_count; ++e) counts[e] += s->counts[e];
  }
  return 1;
}
