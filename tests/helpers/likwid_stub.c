/* A stand-in for liblikwid that tests/helpers/marker_program.c links against (no likwid on the
 * build machines): every marker call aborts, so the program only runs to its end when the
 * preloaded libhwperf_markers.so answers them instead (prototypes as likwid's
 * src/includes/likwid.h). */
#include <stdlib.h>

#define STUB __attribute__((visibility("default")))

STUB void likwid_markerInit(void) { abort(); }
STUB void likwid_markerThreadInit(void) { abort(); }
STUB void likwid_markerClose(void) { abort(); }
STUB int likwid_markerRegisterRegion(const char* regionTag) {
  (void)regionTag;
  abort();
}
STUB int likwid_markerStartRegion(const char* regionTag) {
  (void)regionTag;
  abort();
}
STUB int likwid_markerStopRegion(const char* regionTag) {
  (void)regionTag;
  abort();
}
STUB void likwid_markerGetRegion(const char* regionTag, int* nr_events, double* events,
                                 double* time, int* count) {
  (void)regionTag;
  (void)nr_events;
  (void)events;
  (void)time;
  (void)count;
  abort();
}
