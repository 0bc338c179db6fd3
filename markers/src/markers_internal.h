/* Between the marker library's core (markers.c), its segment (segment.c) and its compatibility
 * entry points (compat.c); hidden, not part of the installed API. */
#ifndef HWPERF_MARKERS_INTERNAL_H
#define HWPERF_MARKERS_INTERNAL_H

#include <stdint.h>

struct hwperf_region_header;

/* The segment's integers are plain uint32_t/uint64_t (the header is shared with C++ and must not
 * use _Atomic). Every access that another thread or the exporter may race with goes through
 * these casts: on the ABIs we build for, _Atomic uint32_t/uint64_t have the size, alignment and
 * representation of the plain types (GCC and Clang guarantee it for lock-free integer types). */
#define A32(p) ((_Atomic uint32_t*)(void*)(p))
#define A64(p) ((_Atomic uint64_t*)(void*)(p))

/* A sealed memfd segment of the library's own, counting the comma-separated perf event names in
 * `events`; NULL when the kernel refuses one of the steps. */
struct hwperf_region_header* hwperf_markers_create_segment(const char* events);

/* The exporter's segment inherited as the fd written in `fd_text`, mapped read-write once every
 * field checks out; NULL (nothing written, the reason said on stderr) otherwise. */
struct hwperf_region_header* hwperf_markers_map_inherited(const char* fd_text);

/* Around appending a name or a slot (never taken once a thread has its slot): the threads of this
 * process take turns, and so do the processes sharing an inherited segment. */
void hwperf_markers_lock_appends(void);
void hwperf_markers_unlock_appends(void);

/* What the calling thread accumulated for region `name` over every CPU; counts has
 * HWPERF_REGION_MAX_EVENTS entries. Returns 0 when the markers are off. */
int hwperf_markers_thread_totals(const char* name, uint64_t* calls, uint64_t* time_ns,
                                 uint64_t* counts, uint32_t* event_count);

/* Appends `name` to the name table without counting anything (likwid_markerRegisterRegion). */
void hwperf_markers_register(const char* name);

#endif
