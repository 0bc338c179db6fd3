// What a shim that wraps syscall(2) needs: the next definition in the search order (libc's), and
// the call's six argument registers, read as the kernel takes them whatever the call passed.
#ifndef HWPERF_TESTS_SHIMS_SYSCALL_SHIM_H
#define HWPERF_TESTS_SHIMS_SYSCALL_SHIM_H

#include <dlfcn.h>
#include <stdarg.h>

typedef long (*syscall_function)(long, ...);

static syscall_function next_syscall(void) {
  static syscall_function next;
  if (next == NULL) next = (syscall_function)dlsym(RTLD_NEXT, "syscall");
  return next;
}

// In `long syscall(long number, ...)`: fills long args[6] from the variadic part.
#define SHIM_READ_SYSCALL_ARGS(number, args)                  \
  do {                                                        \
    va_list list;                                             \
    va_start(list, number);                                   \
    for (int i = 0; i < 6; ++i) args[i] = va_arg(list, long); \
    va_end(list);                                             \
  } while (0)

#endif
