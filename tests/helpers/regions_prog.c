/* A program instrumented with PAPI's high-level API, built against Debian's libpapi-dev, for the
 * end-to-end region tests: `regions_prog CALLS SPIN_MS SLEEP_MS [SECONDS]` runs CALLS times a
 * "compute" region spinning SPIN_MS of its thread's CPU time, then one "sleep" region sleeping
 * SLEEP_MS; with SECONDS it repeats that until SECONDS have passed (the served test). It prints
 * the CPU time it spun in "compute" (CLOCK_THREAD_CPUTIME_ID), for the test's expectation. */
#include <papi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(clockid_t clock) {
  struct timespec t;
  clock_gettime(clock, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char** argv) {
  if (argc < 4) return 2;
  const int calls = atoi(argv[1]);
  const double spin = atof(argv[2]) / 1000, sleep_s = atof(argv[3]) / 1000;
  const double until = argc > 4 ? now(CLOCK_MONOTONIC) + atof(argv[4]) : 0;
  double spun = 0;
  volatile unsigned long sink = 0;
  do {
    for (int i = 0; i < calls; ++i) {
      PAPI_hl_region_begin("compute");
      const double start = now(CLOCK_THREAD_CPUTIME_ID);
      while (now(CLOCK_THREAD_CPUTIME_ID) - start < spin) sink = sink + 1;
      spun += now(CLOCK_THREAD_CPUTIME_ID) - start;
      PAPI_hl_region_end("compute");
    }
    PAPI_hl_region_begin("sleep");
    struct timespec pause = {(time_t)sleep_s, (long)((sleep_s - (double)(time_t)sleep_s) * 1e9)};
    nanosleep(&pause, NULL);
    PAPI_hl_region_end("sleep");
  } while (until > 0 && now(CLOCK_MONOTONIC) < until);
  PAPI_hl_stop();
  printf("compute_cpu_seconds=%.9f\n", spun);
  return 0;
}
