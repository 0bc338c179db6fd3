/* The marker library's side of the shared segment: its layout, a segment of its own for a program
 * started outside the exporter, and the checks an inherited one passes before the first write.
 * The layout and the writer's duties are in hwperf/region_segment.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hwperf/region_segment.h"
#include "markers_internal.h"

/* perf's generic names (tools/perf/util/parse-events.c, event_symbols_hw/_sw) and their
 * perf_event_attr encodings (include/uapi/linux/perf_event.h, perf_hw_id and perf_sw_ids). */
static const struct {
  const char* name;
  uint32_t type;
  uint64_t config;
} known_events[] = {
    {"task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK},
    {"cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK},
    {"page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS},
    {"context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES},
    {"cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS},
    {"minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN},
    {"major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ},
    {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
    {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
    {"cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES},
    {"cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES},
    {"branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS},
    {"branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES},
};

/* Fills the header's event table from a comma-separated list; unknown names are reported once on
 * stderr and left out (the program runs on, counting what it can). */
static uint32_t parse_events(const char* list, struct hwperf_region_event* events) {
  uint32_t count = 0;
  const char* p = list;
  while (*p != '\0') {
    const char* end = strchr(p, ',');
    size_t length = end != NULL ? (size_t)(end - p) : strlen(p);
    int found = 0;
    for (size_t i = 0; i < sizeof known_events / sizeof known_events[0]; ++i) {
      if (strlen(known_events[i].name) == length && memcmp(known_events[i].name, p, length) == 0) {
        found = 1;
        if (count == HWPERF_REGION_MAX_EVENTS) {
          fprintf(stderr, "hwperf_markers: %s names more than %u events; counting the first %u\n",
                  HWPERF_REGION_EVENTS_ENV, HWPERF_REGION_MAX_EVENTS, HWPERF_REGION_MAX_EVENTS);
          return count;
        }
        struct hwperf_region_event* event = &events[count++];
        memset(event, 0, sizeof *event);
        event->type = known_events[i].type;
        event->config = known_events[i].config;
        memcpy(event->name, known_events[i].name, strlen(known_events[i].name) + 1);
      }
    }
    if (!found && length > 0) {
      fprintf(stderr,
              "hwperf_markers: unknown event '%.*s' in %s (known: task-clock, cpu-clock, "
              "page-faults, context-switches, cpu-migrations, minor-faults, major-faults, cycles, "
              "instructions, cache-references, cache-misses, branches, branch-misses)\n",
              (int)length, p, HWPERF_REGION_EVENTS_ENV);
    }
    p += length;
    if (*p == ',') ++p;
  }
  return count;
}

/* A segment of our own for a program started outside the exporter. The fd stays open for the
 * life of the process (never closed, CLOEXEC so no exec'd child holds it): the exporter finds it
 * as /proc/PID/fd/N -> "/memfd:" HWPERF_REGION_MEMFD_NAME " (deleted)". */
struct hwperf_region_header* hwperf_markers_create_segment(const char* events) {
  uint64_t names_offset, slots_offset;
  uint64_t size = hwperf_region_layout(HWPERF_REGION_MAX_REGIONS, HWPERF_REGION_MAX_SLOTS,
                                       &names_offset, &slots_offset);
  int fd = memfd_create(HWPERF_REGION_MEMFD_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return NULL;
  if (ftruncate(fd, (off_t)size) != 0 ||
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    close(fd);
    return NULL;
  }
  void* base = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    close(fd);
    return NULL;
  }
  struct hwperf_region_header* header = base;
  header->magic = HWPERF_REGION_MAGIC;
  header->version = HWPERF_REGION_VERSION;
  header->header_size = (uint32_t)sizeof *header;
  header->segment_size = size;
  header->max_regions = HWPERF_REGION_MAX_REGIONS;
  header->max_slots = HWPERF_REGION_MAX_SLOTS;
  header->names_offset = names_offset;
  header->slots_offset = slots_offset;
  header->event_count = parse_events(events, header->events);
  atomic_store_explicit(A32(&header->state), HWPERF_REGION_STATE_READY, memory_order_release);
  return header;
}

/* The threads of this process append under the mutex; processes sharing an inherited segment
 * then under a POSIX write lock on its first byte, through a close-on-exec descriptor of our own
 * (-1 for a segment of our own, which no other process writes). F_SETLKW waits for another
 * process's lock, and the kernel drops a lock when its process ends, so one killed while appending
 * blocks no one (fcntl(2), "Advisory record locking"). Should the lock fail, this process appends
 * under its mutex alone, as with a segment of its own. */
static pthread_mutex_t g_append_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_lock_fd = -1;

void hwperf_markers_lock_appends(void) {
  pthread_mutex_lock(&g_append_lock);
  struct flock lock = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
  while (g_lock_fd >= 0 && fcntl(g_lock_fd, F_SETLKW, &lock) != 0 && errno == EINTR) {
  }
}

void hwperf_markers_unlock_appends(void) {
  struct flock lock = {.l_type = F_UNLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
  if (g_lock_fd >= 0) fcntl(g_lock_fd, F_SETLK, &lock);
  pthread_mutex_unlock(&g_append_lock);
}

/* Says once (attach runs once per process) why the segment named by HWPERF_REGIONS_FD is not
 * used: the markers are then off, and a user would otherwise see no region and no reason. */
static struct hwperf_region_header* refuse(const char* text, const char* why, int error) {
  fprintf(stderr,
          "hwperf_markers: %s=%s: %s%s%s; the regions of this process (pid %ld) are not "
          "counted. hwperf_exporter --experiment.regions -- CMD sets it for CMD and what CMD "
          "executes, which must keep the descriptor open; a variable set by hand or left from "
          "elsewhere counts nothing (unset it, or set %s for a segment of the program's own)\n",
          HWPERF_REGION_FD_ENV, text, why, error != 0 ? ": " : "",
          error != 0 ? strerror(error) : "", (long)getpid(), HWPERF_REGION_EVENTS_ENV);
  return NULL;
}

/* Every field a writer relies on, checked before the first write by the rules the exporter's
 * reader checks too (hwperf_region_check). */
static int header_valid(const struct hwperf_region_header* h, size_t size) {
  struct hwperf_region_fields f;
  f.state = atomic_load_explicit(A32(&h->state), memory_order_acquire);
  f.magic = h->magic;
  f.version = h->version;
  f.header_size = h->header_size;
  f.segment_size = h->segment_size;
  f.event_count = h->event_count;
  f.max_regions = h->max_regions;
  f.max_slots = h->max_slots;
  f.names_offset = h->names_offset;
  f.slots_offset = h->slots_offset;
  f.slot_count = atomic_load_explicit(A32(&h->slot_count), memory_order_acquire);
  f.region_count = atomic_load_explicit(A32(&h->region_count), memory_order_acquire);
  return hwperf_region_check(&f, (uint64_t)size) == HWPERF_REGION_CHECK_OK;
}

/* The exporter's segment, inherited as fd `text`. Everything is checked before the first write:
 * a wrong fd or a foreign file leaves the markers off and the program untouched, and says so.
 *
 * The descriptor stays open across exec: `-- CMD` is often a wrapper (taskset, numactl, env,
 * time, sh -c), preloaded too, that executes the program, and a marked program may execute
 * another; each attaches to the same segment, and processes that share it (a shell's children)
 * append under the lock above. */
struct hwperf_region_header* hwperf_markers_map_inherited(const char* text) {
  char* end;
  errno = 0;
  long fd = strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || fd < 0 || fd > INT32_MAX) {
    return refuse(text, "not a descriptor number", 0);
  }
  struct stat st;
  if (fstat((int)fd, &st) != 0) return refuse(text, "no open descriptor", errno);
  /* Without the shrink seal the file could be truncated under the mapping, and the next store
   * into it would be a SIGBUS in the measured program. */
  int seals = fcntl((int)fd, F_GET_SEALS);
  if (!S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(struct hwperf_region_header) ||
      st.st_size > (off_t)(64 << 20) || seals < 0 || (seals & F_SEAL_SHRINK) == 0) {
    return refuse(text, "not a region segment (no sealed memfd of a segment's size)", 0);
  }
  size_t size = (size_t)st.st_size;
  void* base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, (int)fd, 0);
  if (base == MAP_FAILED) return refuse(text, "cannot map it", errno);
  if (!header_valid(base, size)) {
    munmap(base, size);
    return refuse(text, "not a region segment (its header fails the checks)", 0);
  }
  g_lock_fd = fcntl((int)fd, F_DUPFD_CLOEXEC, 3);
  return base;
}
