/* The cache lab's matrix multiply (docs/regions.md), marked as the lab marks it, for the region
 * tests: `cache_lab papi|likwid N` allocates and fills a and b in region "init" and multiplies
 * them into a fresh c in region "kernel", through PAPI's high-level calls or likwid's marker calls
 * (linked against Debian's libpapi and the likwid stand-in of likwid_stub.c, so that only a
 * preloaded libhwperf_markers.so can answer them). Just inside each region's markers it takes its
 * own thread's page faults (getrusage(RUSAGE_THREAD), minor and major), which is what the region's
 * page-faults count must be, and prints them after the product's last element:
 *   faults init COUNT
 *   faults kernel COUNT */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "lab_markers.h"

static uint64_t faults(void) {
  struct rusage usage;
  getrusage(RUSAGE_THREAD, &usage);
  return (uint64_t)usage.ru_minflt + (uint64_t)usage.ru_majflt;
}

int main(int argc, char** argv) {
  if (argc != 3 || (strcmp(argv[1], "papi") != 0 && strcmp(argv[1], "likwid") != 0)) {
    fprintf(stderr, "usage: %s papi|likwid N\n", argv[0]);
    return 2;
  }
  use_likwid = strcmp(argv[1], "likwid") == 0;
  const size_t n = (size_t)atoi(argv[2]);
  faults(); /* getrusage's own code paged in before the first region */
  if (use_likwid) likwid_markerInit();

  begin("init");
  uint64_t at_begin = faults();
  double* a = malloc(sizeof(double) * n * n);
  double* b = malloc(sizeof(double) * n * n);
  if (a == NULL || b == NULL) return 1;
  for (size_t i = 0; i < n * n; ++i) a[i] = b[i] = 1.0;
  const uint64_t init_faults = faults() - at_begin;
  end("init");

  double* c = calloc(n * n, sizeof(double));
  if (c == NULL) return 1;
  begin("kernel");
  at_begin = faults();
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j)
      for (size_t k = 0; k < n; ++k) c[i * n + j] += a[i * n + k] * b[k * n + j];
  const uint64_t kernel_faults = faults() - at_begin;
  end("kernel");

  if (use_likwid) likwid_markerClose();
  printf("%f\n", c[n * n - 1]);
  printf("faults init %llu\n", (unsigned long long)init_faults);
  printf("faults kernel %llu\n", (unsigned long long)kernel_faults);
  free(a);
  free(b);
  free(c);
  return 0;
}
