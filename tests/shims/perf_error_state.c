// LD_PRELOAD shim: puts one perf_event descriptor in the state the kernel gives a pinned group
// pushed off the counters (PERF_EVENT_STATE_ERROR): read() returns 0 bytes until the descriptor
// sees ioctl(PERF_EVENT_IOC_ENABLE) (kernel/events/core.c, perf_read_one/__perf_read: an event in
// ERROR state reads nothing; _perf_event_enable moves it out of ERROR).
//
// Armed by a file: once the path in HWPERF_SHIM_ARM exists, the next perf_event descriptor read
// becomes the broken one. Closing it or enabling it ends the fault. Only this test uses it.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

static atomic_int broken_fd = -1;
static atomic_int armed_used = 0;

static int is_perf_fd(int fd) {
  char link[64];
  char target[PATH_MAX];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, target, sizeof target - 1);
  if (n <= 0) return 0;
  target[n] = '\0';
  return strstr(target, "perf_event") != NULL;
}

ssize_t read(int fd, void* buffer, size_t count) {
  static ssize_t (*real_read)(int, void*, size_t);
  if (real_read == NULL) real_read = (ssize_t(*)(int, void*, size_t))dlsym(RTLD_NEXT, "read");
  if (fd == atomic_load(&broken_fd)) return 0;
  if (atomic_load(&armed_used) == 0) {
    const char* arm = getenv("HWPERF_SHIM_ARM");
    if (arm != NULL && access(arm, F_OK) == 0 && is_perf_fd(fd)) {
      int expected = 0;
      if (atomic_compare_exchange_strong(&armed_used, &expected, 1)) {
        atomic_store(&broken_fd, fd);
        return 0;
      }
    }
  }
  return real_read(fd, buffer, count);
}

int ioctl(int fd, unsigned long request, ...) {
  static int (*real_ioctl)(int, unsigned long, ...);
  if (real_ioctl == NULL) real_ioctl = (int (*)(int, unsigned long, ...))dlsym(RTLD_NEXT, "ioctl");
  va_list args;
  va_start(args, request);
  void* argument = va_arg(args, void*);
  va_end(args);
  if (request == PERF_EVENT_IOC_ENABLE && fd == atomic_load(&broken_fd)) {
    atomic_store(&broken_fd, -1);
  }
  return real_ioctl(fd, request, argument);
}

int close(int fd) {
  static int (*real_close)(int);
  if (real_close == NULL) real_close = (int (*)(int))dlsym(RTLD_NEXT, "close");
  if (fd == atomic_load(&broken_fd)) atomic_store(&broken_fd, -1);
  return real_close(fd);
}
