// LD_PRELOAD shim: the kernel's answer to a group that cannot be on a PMU's counters at once.
// perf_event_open of a group member (group_fd >= 0) fails with EINVAL, as validate_group in
// arch/x86/events/core.c makes it fail for a member that does not fit beside the ones before it;
// leaders and ungrouped events open as usual. Lets a machine without a hardware PMU show how the
// exporter refuses such a group. Only the tests that name it use it.
#define _GNU_SOURCE
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "syscall_shim.h"

long syscall(long number, ...) {
  long a[6];
  SHIM_READ_SYSCALL_ARGS(number, a);
  if (number == SYS_perf_event_open && (int)a[3] >= 0) {
    errno = EINVAL;
    return -1;
  }
  return next_syscall()(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}
