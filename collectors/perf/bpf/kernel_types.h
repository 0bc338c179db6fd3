/* The few kernel types the BPF program reads, declared for CO-RE: libbpf moves each field access
 * to where the running kernel's BTF (/sys/kernel/btf/vmlinux) puts it, so these need only name
 * the fields, not lay the structs out. Checked in rather than generated with `bpftool btf dump
 * file /sys/kernel/btf/vmlinux format c` at build time: the build then works on a machine without
 * BTF (the engine refuses to start there, at run time), and the object does not depend on the
 * build machine's kernel. Field names as in include/linux/cgroup-defs.h, sched.h and kernfs.h
 * (Linux 5.5+, where kernfs_node.id became the 64-bit cgroup id). */
#ifndef HWPERF_BPF_KERNEL_TYPES_H
#define HWPERF_BPF_KERNEL_TYPES_H

#include <linux/types.h>

#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

struct kernfs_node {
  __u64 id; /* a cgroup's id: what name_to_handle_at(2) gives for its directory */
};

struct cgroup_root {
  int hierarchy_id; /* 0: cgroup v2, the default hierarchy */
};

struct cgroup {
  struct kernfs_node* kn;
  struct cgroup_root* root;
};

struct css_set {
  struct cgroup* dfl_cgrp; /* the task's cgroup on the v2 hierarchy */
};

struct task_struct {
  struct css_set* cgroups;
};

#pragma clang attribute pop

#endif
