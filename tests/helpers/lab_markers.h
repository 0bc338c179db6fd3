/* What the test programs that are marked as researchers mark theirs share (marker_program.c,
 * cache_lab.c): PAPI's and likwid's marker calls declared as Debian 12's /usr/include/papi.h and
 * likwid's src/includes/likwid.h declare them, and a begin and end through either API. */
#ifndef HWPERF_TEST_LAB_MARKERS_H
#define HWPERF_TEST_LAB_MARKERS_H

int PAPI_hl_region_begin(const char* region);
int PAPI_hl_region_end(const char* region);
int PAPI_hl_stop(void);
void likwid_markerInit(void);
void likwid_markerThreadInit(void);
void likwid_markerClose(void);
int likwid_markerRegisterRegion(const char* regionTag);
int likwid_markerStartRegion(const char* regionTag);
int likwid_markerStopRegion(const char* regionTag);
void likwid_markerGetRegion(const char* regionTag, int* nr_events, double* events, double* time,
                            int* count);

/* 1: begin() and end() call likwid's markers, 0: PAPI's. */
static int use_likwid;

static inline void begin(const char* name) {
  if (use_likwid) {
    likwid_markerStartRegion(name);
  } else {
    PAPI_hl_region_begin(name);
  }
}

static inline void end(const char* name) {
  if (use_likwid) {
    likwid_markerStopRegion(name);
  } else {
    PAPI_hl_region_end(name);
  }
}

#endif
