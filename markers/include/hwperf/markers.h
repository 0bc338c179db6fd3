/* Region markers for hwperf_exporter (libhwperf_markers.so): count a named piece of a program
 * with the process's own perf events and publish the counts live in shared memory that the
 * exporter maps (the layout is hwperf/region_segment.h; docs/regions.md says how to run it).
 *
 * The library does nothing unless the environment asks it to count:
 *   HWPERF_REGIONS_FD=N        the exporter's segment, inherited as fd N (set by `-- CMD`, and
 *                              kept open across exec: a wrapper, the program it executes and
 *                              their children share it); one that is not says so on stderr;
 *   HWPERF_REGIONS_EVENTS=a,b  the library creates its own segment with these perf events, and
 *                              the exporter finds it under /proc/PID/fd.
 * Without either, every call returns at once.
 *
 * Regions nest (up to HWPERF_MARKERS_MAX_DEPTH per thread) and each thread counts its own; the
 * calls are safe from any number of threads and take no lock once a thread has seen a region on
 * a CPU. The same library also answers PAPI's high-level region calls and likwid's marker API,
 * so a program built for either runs unchanged with LD_PRELOAD=libhwperf_markers.so. */
#ifndef HWPERF_MARKERS_H
#define HWPERF_MARKERS_H

#ifdef __cplusplus
extern "C" {
#endif

#define HWPERF_MARKERS_API __attribute__((visibility("default")))

/* Regions open at once on one thread; a begin beyond it is not counted (header.dropped). */
#define HWPERF_MARKERS_MAX_DEPTH 16

/* Attaches to (or creates) the segment now rather than at the first region. Returns 1 when the
 * markers count, 0 when they are no-ops (no environment, or a segment that failed validation).
 * Optional: the library attaches on its own when loaded. */
HWPERF_MARKERS_API int hwperf_markers_init(void);

/* Releases the calling thread's perf events (a later begin on this thread opens them again).
 * The segment stays mapped, so the exporter keeps reading the final counts. */
HWPERF_MARKERS_API void hwperf_markers_close(void);

/* Begin and end a region by name (names longer than 63 bytes are truncated). Return 0 when the
 * call was counted or the markers are off, 1 when it was dropped: nesting too deep, the region or
 * slot table full, or an end without its begin on this thread. */
HWPERF_MARKERS_API int hwperf_region_begin(const char* name);
HWPERF_MARKERS_API int hwperf_region_end(const char* name);

/* Publishes what the innermost open region `name` of this thread has counted so far without
 * ending it (its calls are counted at its end). PAPI_hl_read maps here. */
HWPERF_MARKERS_API int hwperf_region_read(const char* name);

#ifdef __cplusplus
}
#endif

#endif
