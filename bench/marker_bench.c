/* The cost of one begin/end pair of the region markers (libhwperf_markers.so), the figure a
 * researcher needs before putting a region in a loop body. The library attaches when it is loaded,
 * from its environment, so each configuration is a child process of its own (this program again,
 * with --child and the configuration's environment):
 *   hwperf_bench_markers [PAIRS]      default 1000000 pairs per configuration */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hwperf/markers.h"

static uint64_t now_ns(clockid_t clock) {
  struct timespec now;
  clock_gettime(clock, &now);
  return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

static int child(const char* label, long pairs) {
  const int counting = hwperf_markers_init();
  /* A warm-up pair opens the thread's events and creates the slot outside the timing. */
  hwperf_region_begin("loop");
  hwperf_region_end("loop");
  /* Thread CPU time beside wall time: on a shared machine the wall figure carries other
   * programs' turns on the CPU, the CPU figure only this thread's own work (user and kernel). */
  const uint64_t wall0 = now_ns(CLOCK_MONOTONIC), cpu0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
  for (long i = 0; i < pairs; ++i) {
    hwperf_region_begin("loop");
    hwperf_region_end("loop");
  }
  const uint64_t cpu = now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
  const uint64_t wall = now_ns(CLOCK_MONOTONIC) - wall0;
  printf("%-52s %-8s %10.1f %10.1f\n", label, counting ? "yes" : "no", (double)wall / (double)pairs,
         (double)cpu / (double)pairs);
  return 0;
}

int main(int argc, char** argv) {
  if (argc >= 4 && strcmp(argv[1], "--child") == 0) return child(argv[2], atol(argv[3]));
  const long pairs = argc >= 2 ? atol(argv[1]) : 1000000L;
  if (pairs <= 0) {
    fprintf(stderr, "usage: %s [PAIRS]\n", argv[0]);
    return 2;
  }
  static const struct {
    const char* label;
    const char* events; /* NULL: HWPERF_REGIONS_EVENTS unset */
  } configurations[] = {
      {"no segment (markers off)", NULL},
      {"segment, no events (calls and time only)", ""},
      {"segment, task-clock (one read() per marker)", "task-clock"},
      {"segment, task-clock,page-faults,context-switches",
       "task-clock,page-faults,context-switches"},
  };
  char count[32];
  snprintf(count, sizeof count, "%ld", pairs);
  printf("%ld begin/end pairs of one region on one thread, per configuration\n", pairs);
  printf("%-52s %-8s %10s %10s\n", "configuration", "counting", "wall ns", "CPU ns");
  for (size_t i = 0; i < sizeof configurations / sizeof configurations[0]; ++i) {
    fflush(stdout);
    const pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
      unsetenv("HWPERF_REGIONS_FD");
      if (configurations[i].events != NULL) {
        setenv("HWPERF_REGIONS_EVENTS", configurations[i].events, 1);
      } else {
        unsetenv("HWPERF_REGIONS_EVENTS");
      }
      execl("/proc/self/exe", argv[0], "--child", configurations[i].label, count, (char*)NULL);
      _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
  }
  return 0;
}
