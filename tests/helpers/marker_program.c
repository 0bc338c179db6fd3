/* A program instrumented as researchers instrument theirs, run by tests/integration/
 * test_markers_live.cpp with libhwperf_markers.so preloaded. It is linked against Debian's
 * libpapi and against a stand-in likwid library whose every function aborts (likwid_stub.c), so
 * a count can only come from the preloaded markers winning the symbol lookup. It reports what
 * each region did by its own clocks, one "key value..." line each:
 *   marker_program papi SPIN_MS SLEEP_MS [wait]    regions "all" > ("compute" x4, "sleep" x2)
 *   marker_program likwid SPIN_MS SLEEP_MS [wait]  the same through likwid's marker calls
 *   marker_program threads N SPIN_MS [wait]        N threads, thread i pinned to CPU i % CPUs,
 *                                                  each with one region "work"
 *   marker_program pages MS 0 [wait]               for MS ms, region "page" around the first touch
 *                                                  of one fresh page (one page fault a call);
 *                                                  prints "pages CALLS"
 *   marker_program nest DEPTH 0 [wait]             regions "n0" > "n1" > ... DEPTH deep, then
 *                                                  an end of "unopened"; prints "nested DEPTH"
 *   marker_program race N START_NS 0               at CLOCK_MONOTONIC START_NS prints "ready",
 *                                                  registers regions "PID.0" ... "PID.N-1"
 *                                                  (likwid), then begins and ends each once:
 *                                                  processes started together append to one
 *                                                  segment at once; prints "raced N"
 *   marker_program exec PROGRAM [ARG...]           region "before", then executes PROGRAM
 * With "wait" it prints "ready" when done and exits at the end of its stdin, so that a test can
 * look at it while it still runs. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "lab_markers.h"

enum { COMPUTE_CALLS = 4, SLEEP_CALLS = 2 };

static uint64_t clock_ns(clockid_t clock) {
  struct timespec now;
  clock_gettime(clock, &now);
  return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

/* Spins until this thread has used `ms` of CPU. */
static void spin(unsigned ms) {
  const uint64_t until = clock_ns(CLOCK_THREAD_CPUTIME_ID) + (uint64_t)ms * 1000000u;
  volatile uint64_t sink = 0;
  while (clock_ns(CLOCK_THREAD_CPUTIME_ID) < until) {
    for (int i = 0; i < 10000; ++i) sink = sink + (uint64_t)i;
  }
}

/* Each region's CPU and wall time by the program's own clocks, taken just inside the markers. */
static void regions(unsigned spin_ms, unsigned sleep_ms) {
  uint64_t compute_cpu = 0, sleep_wall = 0, sleep_cpu = 0;
  begin("all");
  for (int i = 0; i < COMPUTE_CALLS; ++i) {
    begin("compute");
    uint64_t cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    spin(spin_ms / COMPUTE_CALLS);
    compute_cpu += clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
    end("compute");
  }
  for (int i = 0; i < SLEEP_CALLS; ++i) {
    begin("sleep");
    uint64_t wall0 = clock_ns(CLOCK_MONOTONIC), cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    struct timespec pause = {0, (long)(sleep_ms / SLEEP_CALLS) * 1000000L};
    nanosleep(&pause, NULL);
    sleep_wall += clock_ns(CLOCK_MONOTONIC) - wall0;
    sleep_cpu += clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
    end("sleep");
  }
  end("all");
  printf("tid %ld\n", (long)syscall(SYS_gettid));
  printf("compute %d %llu\n", COMPUTE_CALLS, (unsigned long long)compute_cpu);
  printf("sleep %d %llu %llu\n", SLEEP_CALLS, (unsigned long long)sleep_wall,
         (unsigned long long)sleep_cpu);
  if (use_likwid) {
    double events[8] = {0}, time = 0;
    int nr_events = 8, count = 0;
    likwid_markerGetRegion("compute", &nr_events, events, &time, &count);
    printf("likwid_get %d %d %.0f %.0f\n", count, nr_events, time * 1e9, events[0]);
  }
}

struct worker {
  pthread_t thread;
  int cpu;
  unsigned spin_ms;
  long tid;
  uint64_t cpu_ns;
  int ran_on;
};

static void* work(void* argument) {
  struct worker* w = argument;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET((size_t)w->cpu, &set);
  if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) w->cpu = -1;
  w->tid = (long)syscall(SYS_gettid);
  PAPI_hl_region_begin("work");
  uint64_t cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  spin(w->spin_ms);
  w->cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
  w->ran_on = sched_getcpu();
  PAPI_hl_region_end("work");
  return NULL;
}

static void threads(int count, unsigned spin_ms) {
  cpu_set_t allowed;
  sched_getaffinity(0, sizeof allowed, &allowed);
  int cpus[CPU_SETSIZE], ncpus = 0;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET((size_t)c, &allowed)) cpus[ncpus++] = c;
  }
  struct worker* workers = calloc((size_t)count, sizeof *workers);
  for (int i = 0; i < count; ++i) {
    workers[i].cpu = cpus[i % ncpus];
    workers[i].spin_ms = spin_ms;
    pthread_create(&workers[i].thread, NULL, work, &workers[i]);
  }
  for (int i = 0; i < count; ++i) pthread_join(workers[i].thread, NULL);
  /* "thread TID PINNED_CPU CPU_AT_END CPU_NS" */
  for (int i = 0; i < count; ++i) {
    printf("thread %ld %d %d %llu\n", workers[i].tid, workers[i].cpu, workers[i].ran_on,
           (unsigned long long)workers[i].cpu_ns);
  }
  free(workers);
}

static void pages(unsigned ms) {
  const size_t page = (size_t)sysconf(_SC_PAGESIZE), chunk = 1024;
  const uint64_t until = clock_ns(CLOCK_MONOTONIC) + (uint64_t)ms * 1000000u;
  unsigned long long calls = 0;
  while (clock_ns(CLOCK_MONOTONIC) < until) {
    char* area =
        mmap(NULL, chunk * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (area == MAP_FAILED) exit(1);
    /* One fault per page: no huge page may map many at once. */
    madvise(area, chunk * page, MADV_NOHUGEPAGE);
    for (size_t i = 0; i < chunk; ++i) {
      PAPI_hl_region_begin("page");
      ((volatile char*)area)[i * page] = 1;
      PAPI_hl_region_end("page");
      ++calls;
    }
    munmap(area, chunk * page);
  }
  printf("pages %llu\n", calls);
}

static void nest(int depth) {
  char names[64][8];
  for (int i = 0; i < depth && i < 64; ++i) {
    snprintf(names[i], sizeof names[i], "n%d", i);
    PAPI_hl_region_begin(names[i]);
  }
  for (int i = (depth < 64 ? depth : 64) - 1; i >= 0; --i) PAPI_hl_region_end(names[i]);
  PAPI_hl_region_end("unopened");
  printf("nested %d\n", depth);
}

static void race(int count, uint64_t start_ns) {
  char(*names)[24] = calloc((size_t)count, sizeof *names);
  for (int i = 0; i < count; ++i) snprintf(names[i], sizeof names[i], "%d.%d", (int)getpid(), i);
  while (clock_ns(CLOCK_MONOTONIC) < start_ns) {
  }
  printf("ready\n");
  fflush(stdout);
  for (int i = 0; i < count; ++i) likwid_markerRegisterRegion(names[i]);
  for (int i = 0; i < count; ++i) {
    PAPI_hl_region_begin(names[i]);
    PAPI_hl_region_end(names[i]);
  }
  free(names);
  printf("raced %d\n", count);
}

int main(int argc, char** argv) {
  if (argc >= 3 && strcmp(argv[1], "exec") == 0) {
    PAPI_hl_region_begin("before");
    PAPI_hl_region_end("before");
    execv(argv[2], argv + 2);
    perror(argv[2]);
    return 127;
  }
  if (argc < 4) {
    fprintf(stderr, "usage: %s papi|likwid SPIN_MS SLEEP_MS [wait] | threads N SPIN_MS [wait]\n",
            argv[0]);
    return 2;
  }
  if (strcmp(argv[1], "pages") == 0) {
    pages((unsigned)atoi(argv[2]));
  } else if (strcmp(argv[1], "nest") == 0) {
    nest(atoi(argv[2]));
  } else if (strcmp(argv[1], "race") == 0) {
    race(atoi(argv[2]), strtoull(argv[3], NULL, 10));
  } else if (strcmp(argv[1], "threads") == 0) {
    threads(atoi(argv[2]), (unsigned)atoi(argv[3]));
  } else {
    use_likwid = strcmp(argv[1], "likwid") == 0;
    if (use_likwid) {
      likwid_markerInit();
      likwid_markerThreadInit();
      likwid_markerRegisterRegion("compute");
    }
    regions((unsigned)atoi(argv[2]), (unsigned)atoi(argv[3]));
    if (use_likwid) {
      likwid_markerClose();
    } else {
      PAPI_hl_stop();
    }
  }
  if (argc > 4 && strcmp(argv[4], "wait") == 0) {
    printf("ready\n");
    fflush(stdout);
    char line[64];
    while (fgets(line, sizeof line, stdin) != NULL) {
    }
  }
  return 0;
}
