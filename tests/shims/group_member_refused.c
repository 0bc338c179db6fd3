// LD_PRELOAD shim: the kernel's answer to a group that cannot be on a PMU's counters at once.
// perf_event_open of a group member (group_fd >= 0) fails with EINVAL, as validate_group in
// arch/x86/events/core.c makes it fail for a member that does not fit beside the ones before it;
// leaders and ungrouped events open as usual. Lets a machine without a hardware PMU show how the
// exporter refuses such a group. Only the tests that name it use it.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <unistd.h>

long syscall(long number, ...) {
  static long (*real_syscall)(long, ...);
  if (real_syscall == NULL) real_syscall = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
  va_list args;
  va_start(args, number);
  long a[6];
  for (int i = 0; i < 6; ++i) a[i] = va_arg(args, long);
  va_end(args);
  if (number == SYS_perf_event_open && (int)a[3] >= 0) {
    errno = EINVAL;
    return -1;
  }
  return real_syscall(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}
