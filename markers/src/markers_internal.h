/* Between the marker library's core (markers.c) and its compatibility entry points (compat.c);
 * hidden, not part of the installed API. */
#ifndef HWPERF_MARKERS_INTERNAL_H
#define HWPERF_MARKERS_INTERNAL_H

#include <stdint.h>

/* The segment size the library creates, with its table offsets (64-byte aligned). */
uint64_t hwperf_markers_layout(uint64_t* names_offset, uint64_t* slots_offset);

/* What the calling thread accumulated for region `name` over every CPU; counts has
 * HWPERF_REGION_MAX_EVENTS entries. Returns 0 when the markers are off. */
int hwperf_markers_thread_totals(const char* name, uint64_t* calls, uint64_t* time_ns,
                                 uint64_t* counts, uint32_t* event_count);

/* Appends `name` to the name table without counting anything (likwid_markerRegisterRegion). */
void hwperf_markers_register(const char* name);

#endif
