/* The layout of the BPF engine's maps, shared by the BPF program (cgroup_counts.bpf.c) and the
 * C++ side that sizes, fills and reads them (cgroup_engine.cpp, map_values.cpp). C, so that
 * clang -target bpf and the C++ compiler read the same definitions. */
#ifndef HWPERF_BPF_MAP_LAYOUT_H
#define HWPERF_BPF_MAP_LAYOUT_H

#include <linux/types.h>

/* Events counted on each CPU (the members of every group, in order); the C++ side refuses more.
 * The per-CPU state below holds three readings per event, so this bounds its size (2.1 KiB). */
#define HWPERF_BPF_MAX_EVENTS 24
/* Cgroup levels recorded of a counted cgroup's ancestry (the root is level 0; a Kubernetes
 * container sits at level 4 or 5): a tracked cgroup gets the counts of its descendants. */
#define HWPERF_BPF_MAX_LEVELS 16

/* One counter's three numbers, as bpf_perf_event_read_value gives them (struct
 * bpf_perf_event_value): the count, and the nanoseconds it was enabled and running. */
struct hwperf_bpf_reading {
  __u64 counter;
  __u64 enabled;
  __u64 running;
};

/* The value of a cgroup's entry, per CPU: flags, then one reading per event. The maps' value
 * size is cut to the events really counted (hwperf_bpf_counts_size), so the array is read only
 * up to the engine's event count. */
#define HWPERF_BPF_REMOVED 1ull /* flags: the cgroup was removed (set by the rmdir program) */
/* trigger_read's argument: this CPU's counters and switch event were opened anew (it came back
 * online); their first readings start the count, as at the engine's start. */
#define HWPERF_BPF_TRIGGER_RESTART 1ull
/* trigger_read's argument: the CPU's counters are about to be replaced; no run counts there until
 * the restarting one. */
#define HWPERF_BPF_TRIGGER_PAUSE 2ull
struct hwperf_bpf_counts {
  __u64 flags;
  struct hwperf_bpf_reading sum[HWPERF_BPF_MAX_EVENTS];
};
#define hwperf_bpf_counts_size(events) (8u + 24u * (events))

/* A counted cgroup's ancestors, written once when its entry is made: the root (level 0) first,
 * the cgroup itself last; a cgroup deeper than HWPERF_BPF_MAX_LEVELS has only its first ones. */
struct hwperf_bpf_lineage {
  __u32 levels;
  __u32 unused;
  __u64 ancestor[HWPERF_BPF_MAX_LEVELS];
};

/* A CPU's own state (a per-CPU array of one entry): the last reading of each counter, the deltas
 * of the run in progress, and what went wrong. */
struct hwperf_bpf_cpu_state {
  __u64 primed; /* 0 until the first run set `last`: that run attributes nothing */
  __u64 runs;   /* program runs on this CPU: cgroup switches and triggered reads */
  /* Switches whose cgroup had no entry and found the map full (max_cgroups): not counted. */
  __u64 not_counted;
  /* The CPU's cgroup-switches event's count at the last run, and the switches the program did
   * not run at (none is known on the sched_switch tracepoint; tests skip some on purpose): what
   * the counters advanced across a missed switch belongs to more than one cgroup and goes to
   * `unattributed`. */
  __u64 switches;
  __u64 missed_switches;
  /* 1 when the last run was at a switch: the scheduler counts that switch after the tracepoint,
   * so the count read at the next run is one more. */
  __u64 at_switch;
  __u64 seen;   /* cgroup switches seen on this CPU (switch_period counts them) */
  __u64 paused; /* set by a pausing trigger: runs count nothing until a restarting one */
  struct hwperf_bpf_reading unattributed[HWPERF_BPF_MAX_EVENTS];
  __u64 read_failures[HWPERF_BPF_MAX_EVENTS]; /* bpf_perf_event_read_value failures */
  __s64 last_error[HWPERF_BPF_MAX_EVENTS];    /* the last one's -errno */
  struct hwperf_bpf_reading last[HWPERF_BPF_MAX_EVENTS];
  struct hwperf_bpf_reading delta[HWPERF_BPF_MAX_EVENTS];
};

#endif
