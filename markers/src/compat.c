/* PAPI's high-level region API and likwid's marker API on top of the hwperf markers, so that a
 * program built for either runs unchanged with LD_PRELOAD=libhwperf_markers.so: the dynamic
 * linker binds a preloaded library's definitions before those of libpapi or liblikwid
 * (ld.so(8), LD_PRELOAD). Neither papi.h nor likwid.h is included; the prototypes below are
 * written to match theirs exactly. */
#include <stdint.h>

#include "hwperf/markers.h"
#include "hwperf/region_segment.h"
#include "markers_internal.h"

/* Debian 12's libpapi-dev 7.0.0, /usr/include/papi.h lines 1238-1241 (PAPI_OK is 0, line 254).
 * papi.h declares `int PAPI_hl_stop();`, which in C is compatible with (void). */
#define HWPERF_PAPI_OK 0
HWPERF_MARKERS_API int PAPI_hl_region_begin(const char* region);
HWPERF_MARKERS_API int PAPI_hl_read(const char* region);
HWPERF_MARKERS_API int PAPI_hl_region_end(const char* region);
HWPERF_MARKERS_API int PAPI_hl_stop(void);

/* Every call answers PAPI_OK: a dropped region is counted in the segment's header, and a program
 * that aborts on an error must not stop because the exporter's tables are full. */
int PAPI_hl_region_begin(const char* region) {
  hwperf_region_begin(region);
  return HWPERF_PAPI_OK;
}

int PAPI_hl_read(const char* region) {
  hwperf_region_read(region);
  return HWPERF_PAPI_OK;
}

int PAPI_hl_region_end(const char* region) {
  hwperf_region_end(region);
  return HWPERF_PAPI_OK;
}

/* PAPI stops the calling thread's high-level event set; here the thread's perf events close. */
int PAPI_hl_stop(void) {
  hwperf_markers_close();
  return HWPERF_PAPI_OK;
}

/* likwid's marker API, src/includes/likwid.h in RRZE-HPC/likwid (v5.x, "Marker API related
 * functions"); its LIKWID_MARKER_START(tag) etc. (likwid-marker.h) expand to these calls. */
HWPERF_MARKERS_API void likwid_markerInit(void);
HWPERF_MARKERS_API void likwid_markerThreadInit(void);
HWPERF_MARKERS_API void likwid_markerNextGroup(void);
HWPERF_MARKERS_API void likwid_markerClose(void);
HWPERF_MARKERS_API int likwid_markerRegisterRegion(const char* regionTag);
HWPERF_MARKERS_API int likwid_markerStartRegion(const char* regionTag);
HWPERF_MARKERS_API int likwid_markerStopRegion(const char* regionTag);
HWPERF_MARKERS_API int likwid_markerResetRegion(const char* regionTag);
HWPERF_MARKERS_API void likwid_markerGetRegion(const char* regionTag, int* nr_events,
                                               double* events, double* time, int* count);

void likwid_markerInit(void) { hwperf_markers_init(); }

/* Threads attach lazily at their first region. */
void likwid_markerThreadInit(void) {}

/* One event set for the whole run: the exporter chose the events. */
void likwid_markerNextGroup(void) {}

void likwid_markerClose(void) { hwperf_markers_close(); }

/* Appends the name (a begin would do it too); the thread's slot still appears at its first end. */
int likwid_markerRegisterRegion(const char* regionTag) {
  hwperf_markers_register(regionTag);
  return 0;
}

int likwid_markerStartRegion(const char* regionTag) {
  hwperf_region_begin(regionTag);
  return 0;
}

int likwid_markerStopRegion(const char* regionTag) {
  hwperf_region_end(regionTag);
  return 0;
}

/* The exporter's region counters only grow (they are Prometheus counters): a reset is ignored. */
int likwid_markerResetRegion(const char* regionTag) {
  (void)regionTag;
  return 0;
}

void likwid_markerGetRegion(const char* regionTag, int* nr_events, double* events, double* time,
                            int* count) {
  uint64_t calls, time_ns, counts[HWPERF_REGION_MAX_EVENTS];
  uint32_t event_count;
  hwperf_markers_thread_totals(regionTag, &calls, &time_ns, counts, &event_count);
  if (nr_events != 0) {
    int n = *nr_events < (int)event_count ? *nr_events : (int)event_count;
    if (n < 0) n = 0;
    for (int i = 0; i < n; ++i) {
      if (events != 0) events[i] = (double)counts[i];
    }
    *nr_events = n;
  }
  if (time != 0) *time = (double)time_ns * 1e-9;
  if (count != 0) *count = calls > INT32_MAX ? INT32_MAX : (int)calls;
}
