// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Per-cgroup counts from one set of counters per CPU (issue 38). Licensed GPL-2.0-only or
 * BSD-2-Clause at the reader's choice: GPL-compatible, as the kernel requires of a program that
 * calls bpf_perf_event_read_value (a GPL-only helper); "Dual BSD/GPL" below says so to the
 * kernel.
 *
 * The design is that of Linux perf's `perf stat --for-each-cgroup --bpf-counters`
 * (tools/perf/util/bpf_skel/bperf_cgroup.bpf.c), written anew: every event is opened once per
 * CPU without a cgroup and put in `counters`; on_sched_switch runs at the sched_switch
 * tracepoint and, when the task it switches out is in another cgroup than the one it switches in,
 * gives what every counter advanced since the previous run on that CPU to the cgroup of the task
 * going out. (perf's program runs on the PERF_COUNT_SW_CGROUP_SWITCHES event instead, which the
 * kernel skips while bpf_prog_active is held on the CPU; here that event only counts, to tell
 * whether a switch was missed.) trigger_read does the same on demand, run on each CPU through
 * BPF_PROG_TEST_RUN before the maps are read, so that the time since the last switch is not
 * missing.
 *
 * own_counts receives the counts, per CPU: every cgroup whose tasks ran, from its first switch,
 * keyed by cgroup id (made here, so a cgroup made and removed between two reads is counted), its
 * own tasks only. When an entry is made, `lineage` gets the cgroup's ancestors, from which user
 * space adds a cgroup's counts to those of the cgroups it tracks above it (as a perf_event cgroup
 * event counts a cgroup with its descendants): a switch then costs one lookup, however deep the
 * cgroup and however many are tracked (walking the ancestors at every switch cost 150 ns more
 * here, with a cgroup two levels down). on_cgroup_rmdir flags the entries of a removed cgroup, in
 * own_counts and in `tracked`; user space returns their counts and then deletes them, so that a
 * churn of short-lived cgroups does not fill the maps. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "kernel_types.h"
#include "map_layout.h"

/* Set by user space before loading (the skeleton's rodata); the verifier reads them as constants,
 * which bounds every loop over the events to the maps' real value size. */
const volatile __u32 event_count = 1;
const volatile __u32 cpu_slots = 1; /* libbpf_num_possible_cpus(): a counter's key is
                                       event * cpu_slots + cpu */
/* Tests only: the program counts at every n-th cgroup switch, as if the others were missed. */
const volatile __u64 switch_period = 1;

/* All zeros: the first value of a new entry (map memory, as bpf_map_update_elem wants). */
struct hwperf_bpf_counts zero_counts = {};

struct {
  __uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
  __uint(key_size, sizeof(__u32));
  __uint(value_size, sizeof(__u32));
  __uint(max_entries, 1); /* event_count * cpu_slots, set before loading */
} counters SEC(".maps");

/* Each CPU's cgroup-switches event (key: the CPU), whose count tells the programs whether they
 * ran at every switch. */
struct {
  __uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
  __uint(key_size, sizeof(__u32));
  __uint(value_size, sizeof(__u32));
  __uint(max_entries, 1); /* cpu_slots */
} switch_events SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(key_size, sizeof(__u32));
  __uint(value_size, sizeof(struct hwperf_bpf_cpu_state));
  __uint(max_entries, 1);
} cpu_state SEC(".maps");

/* The value size is cut to hwperf_bpf_counts_size(event_count) before loading. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(key_size, sizeof(__u64));
  __uint(value_size, sizeof(struct hwperf_bpf_counts));
  __uint(max_entries, 1); /* max_cgroups */
} own_counts SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __type(key, __u64);
  __type(value, struct hwperf_bpf_lineage);
  __uint(max_entries, 1); /* max_cgroups */
} lineage SEC(".maps");

/* The cgroups user space tracks, each with its flags (HWPERF_BPF_REMOVED); never read at a
 * switch. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __type(key, __u64);
  __type(value, __u64);
  __uint(max_entries, 1); /* max_tracked */
} tracked SEC(".maps");

static __always_inline void add_to(struct hwperf_bpf_reading* sum,
                                   const struct hwperf_bpf_cpu_state* state) {
  for (__u32 i = 0; i < HWPERF_BPF_MAX_EVENTS; i++) {
    if (i >= event_count) break;
    sum[i].counter += state->delta[i].counter;
    sum[i].enabled += state->delta[i].enabled;
    sum[i].running += state->delta[i].running;
  }
}

/* Reads every counter of this CPU into state->delta (what it advanced since the last run) and
 * state->last. A counter that cannot be read contributes nothing this time; its next reading
 * carries what it missed. */
static __always_inline void read_counters(struct hwperf_bpf_cpu_state* state, __u32 cpu) {
  for (__u32 i = 0; i < HWPERF_BPF_MAX_EVENTS; i++) {
    if (i >= event_count) break;
    struct bpf_perf_event_value now;
    long error = bpf_perf_event_read_value(&counters, (__u64)i * cpu_slots + cpu, &now, sizeof now);
    if (error) {
      state->read_failures[i]++;
      state->last_error[i] = error;
      state->delta[i].counter = state->delta[i].enabled = state->delta[i].running = 0;
      continue;
    }
    state->delta[i].counter = now.counter - state->last[i].counter;
    state->delta[i].enabled = now.enabled - state->last[i].enabled;
    state->delta[i].running = now.running - state->last[i].running;
    state->last[i].counter = now.counter;
    state->last[i].enabled = now.enabled;
    state->last[i].running = now.running;
  }
}

/* Records the running task's cgroup's ancestors, the root first and the cgroup itself last. */
static __always_inline void record_lineage(__u64 id) {
  struct hwperf_bpf_lineage ancestors = {};
  for (__u32 level = 0; level < HWPERF_BPF_MAX_LEVELS; level++) {
    __u64 ancestor = bpf_get_current_ancestor_cgroup_id(level);
    if (!ancestor) break;
    ancestors.ancestor[level] = ancestor;
    ancestors.levels = level + 1;
  }
  bpf_map_update_elem(&lineage, &id, &ancestors, BPF_NOEXIST);
}

/* The entry of the running task's cgroup, made on its first switch; NULL when the map is full. */
static __always_inline struct hwperf_bpf_counts* own_entry(__u64 id) {
  struct hwperf_bpf_counts* counts = bpf_map_lookup_elem(&own_counts, &id);
  if (counts) return counts;
  /* Another CPU may make it first (EEXIST): the lookup below finds theirs. */
  if (bpf_map_update_elem(&own_counts, &id, &zero_counts, BPF_NOEXIST) == 0) record_lineage(id);
  return bpf_map_lookup_elem(&own_counts, &id);
}

/* Whether the program ran at every cgroup switch on this CPU since its last run there, from the
 * CPU's cgroup-switches event's count now (`switches`, unknown when it could not be read):
 * one more than at the last run for a run at a switch, the same for a triggered run. */
static __always_inline int whole_interval(struct hwperf_bpf_cpu_state* state, __u64 switches,
                                          int known, int at_switch) {
  __u64 expected = state->switches + state->at_switch;
  state->at_switch = at_switch;
  if (!known) return 1;
  state->switches = switches;
  if (switches <= expected) return 1;
  state->missed_switches += switches - expected;
  return 0;
}

static __always_inline int count_since_last_run(__u64 switches, int known, int at_switch,
                                                __u64 restart) {
  __u32 zero = 0;
  struct hwperf_bpf_cpu_state* state = bpf_map_lookup_elem(&cpu_state, &zero);
  if (!state) return 0;
  state->runs++;
  if (restart == HWPERF_BPF_TRIGGER_PAUSE) state->paused = 1;
  /* New counters start from zero: a difference with the old ones' last readings is no count. */
  if (restart == HWPERF_BPF_TRIGGER_RESTART) {
    state->primed = 0;
    state->paused = 0;
  }
  if (state->paused) return 0;
  int whole = 1;
  if (state->primed) {
    whole = whole_interval(state, switches, known, at_switch);
  } else {
    state->switches = known ? switches : 0;
    state->at_switch = at_switch;
  }
  read_counters(state, bpf_get_smp_processor_id());
  if (!state->primed) {
    state->primed = 1;
    return 0;
  }
  if (!whole) {
    /* The counters' advance spans cgroups that ran between the missed switches: it is no one's. */
    add_to(state->unattributed, state);
    return 0;
  }
  struct hwperf_bpf_counts* own = own_entry(bpf_get_current_cgroup_id());
  if (own) {
    add_to(own->sum, state);
  } else {
    /* The map is full (max_cgroups): given to no cgroup, but not lost from sight. */
    state->not_counted++;
    add_to(state->unattributed, state);
  }
  return 0;
}

/* This CPU's cgroup-switches count (bpf_perf_event_read: the count alone, without the times,
 * which cost another clock read); `known` is 0 when it could not be read (an error comes back as
 * a negative number, which no count reaches). */
static __always_inline __u64 switch_count(int* known) {
  __u64 count = bpf_perf_event_read(&switch_events, BPF_F_CURRENT_CPU);
  *known = (__s64)count >= 0 || (__s64)count < -4095;
  return count;
}

/* Plain loads through the tracepoint's typed pointers, which the verifier follows in the kernel's
 * BTF (BPF_CORE_READ's four probe reads cost more than the rest of a switch's work). */
static __always_inline __u64 cgroup_of(struct task_struct* task) {
  return task->cgroups->dfl_cgrp->kn->id;
}

/* At every context switch, before the scheduler counts it as a cgroup switch (current is still
 * `prev`): a switch between tasks of one cgroup is none. A BTF tracepoint rather than a program
 * on the cgroup-switches event: the kernel skips a perf_event program while anything holds
 * bpf_prog_active on the CPU (a BPF map call from user space that sleeps, say), where this one
 * runs unless it would recurse; and it costs less (no overflow path, no sample). */
SEC("tp_btf/sched_switch")
int BPF_PROG(on_sched_switch, __u64 preempt, struct task_struct* prev, struct task_struct* next) {
  if (cgroup_of(prev) == cgroup_of(next)) return 0;
  __u32 zero = 0;
  struct hwperf_bpf_cpu_state* state = bpf_map_lookup_elem(&cpu_state, &zero);
  if (!state) return 0;
  if (switch_period > 1 && ++state->seen % switch_period != 0) return 0;
  int known = 0;
  __u64 switches = switch_count(&known);
  return count_since_last_run(switches, known, 1, 0);
}

/* Never attached: user space runs it on a CPU with BPF_PROG_TEST_RUN (BPF_F_TEST_RUN_ON_CPU),
 * where it interrupts whatever task runs there, whose cgroup gets the time since the last switch.
 * Its one argument: HWPERF_BPF_TRIGGER_PAUSE before the CPU's counters are replaced,
 * HWPERF_BPF_TRIGGER_RESTART once they were.
 */
SEC("raw_tp")
int trigger_read(struct bpf_raw_tracepoint_args* ctx) {
  int known = 0;
  __u64 switches = switch_count(&known);
  return count_since_last_run(switches, known, 0, ctx->args[0]);
}

static __always_inline void flag_removed(void* map, __u64 id) {
  __u64* flags = bpf_map_lookup_elem(map, &id);
  if (flags) *flags |= HWPERF_BPF_REMOVED;
}

/* A cgroup was removed: its entries keep their counts until user space has returned them. Only
 * cgroup v2's (hierarchy 0): a v1 hierarchy numbers its cgroups on its own, and the same number
 * may name a v2 cgroup. */
SEC("tp_btf/cgroup_rmdir")
int BPF_PROG(on_cgroup_rmdir, struct cgroup* cgrp, const char* path) {
  if (BPF_CORE_READ(cgrp, root, hierarchy_id) != 0) return 0;
  __u64 id = BPF_CORE_READ(cgrp, kn, id);
  flag_removed(&own_counts, id);
  flag_removed(&tracked, id);
  return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
