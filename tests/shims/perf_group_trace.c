// LD_PRELOAD shim: records how the exporter opens and reads perf_event descriptors, so that a
// test can see a group opened as one kernel group (members naming their leader in group_fd,
// PERF_FORMAT_GROUP) and read with one read(2) of the leader. Appends to the file named in
// HWPERF_SHIM_LOG, one line per call:
//   open fd=N pid=P cpu=C group_fd=G read_format=F flags=X   each perf_event_open that succeeded
//   read fd=N                                                each read(2) of such a descriptor
//   close fd=N                                               its close(2)
// The exporter opens perf events through syscall(SYS_perf_event_open, ...) (perf_event.cpp).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "syscall_shim.h"

#define MAX_TRACED_FD 65536

static atomic_char traced[MAX_TRACED_FD];

static void log_line(const char* line, int length) {
  static atomic_int log_fd = -1;
  int fd = atomic_load(&log_fd);
  if (fd < 0) {
    const char* path = getenv("HWPERF_SHIM_LOG");
    if (path == NULL) return;
    fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return;
    int expected = -1;
    if (!atomic_compare_exchange_strong(&log_fd, &expected, fd)) {
      close(fd);
      fd = expected;
    }
  }
  // O_APPEND: each line lands whole even when threads log at once.
  (void)!write(fd, line, (size_t)length);
}

static int is_traced(int fd) { return fd >= 0 && fd < MAX_TRACED_FD && atomic_load(&traced[fd]); }

long syscall(long number, ...) {
  long a[6];
  SHIM_READ_SYSCALL_ARGS(number, a);
  const long result = next_syscall()(number, a[0], a[1], a[2], a[3], a[4], a[5]);
  if (number != SYS_perf_event_open || result < 0) return result;
  const int saved = errno;
  const struct perf_event_attr* attr = (const struct perf_event_attr*)a[0];
  char line[200];
  const int length = snprintf(
      line, sizeof line, "open fd=%ld pid=%ld cpu=%ld group_fd=%ld read_format=%llu flags=%lu\n",
      result, (long)(int)a[1], (long)(int)a[2], (long)(int)a[3],
      (unsigned long long)attr->read_format, (unsigned long)a[4]);
  if (result < MAX_TRACED_FD) atomic_store(&traced[result], 1);
  log_line(line, length);
  errno = saved;
  return result;
}

ssize_t read(int fd, void* buffer, size_t count) {
  static ssize_t (*real_read)(int, void*, size_t);
  if (real_read == NULL) real_read = (ssize_t(*)(int, void*, size_t))dlsym(RTLD_NEXT, "read");
  if (is_traced(fd)) {
    const int saved = errno;
    char line[64];
    log_line(line, snprintf(line, sizeof line, "read fd=%d\n", fd));
    errno = saved;
  }
  return real_read(fd, buffer, count);
}

int close(int fd) {
  static int (*real_close)(int);
  if (real_close == NULL) real_close = (int (*)(int))dlsym(RTLD_NEXT, "close");
  if (is_traced(fd)) {
    // Logged before the descriptor can be reused by another thread's open.
    char line[64];
    log_line(line, snprintf(line, sizeof line, "close fd=%d\n", fd));
    atomic_store(&traced[fd], 0);
  }
  return real_close(fd);
}
