#include "collectors/perf/perf_event.h"

#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace hwperf::perf {

OrErrno<UniqueFd> open_counter(const EventEncoding& event, pid_t pid, int cpu,
                               const OpenOptions& options) {
  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.type = event.type;
  attr.config = event.config;
  attr.config1 = event.config1;
  attr.config2 = event.config2;
  attr.exclude_user = event.exclude_user ? 1 : 0;
  attr.exclude_kernel = event.exclude_kernel ? 1 : 0;
  attr.exclude_hv = event.exclude_hv ? 1 : 0;
  attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
  attr.inherit = options.inherit ? 1 : 0;
  attr.disabled = options.enable_on_exec ? 1 : 0;
  attr.enable_on_exec = options.enable_on_exec ? 1 : 0;
  const unsigned long flags = PERF_FLAG_FD_CLOEXEC | (options.cgroup ? PERF_FLAG_PID_CGROUP : 0);
  const long fd = ::syscall(SYS_perf_event_open, &attr, pid, cpu, -1, flags);
  if (fd < 0) return {UniqueFd{}, errno};
  return {UniqueFd(static_cast<int>(fd)), 0};
}

OrErrno<Reading> read_counter(const UniqueFd& fd) {
  std::uint64_t words[3] = {};
  const ssize_t n = ::read(fd.get(), words, sizeof words);
  if (n < 0) return {{}, errno};
  // A pinned event pushed off its counter (the kernel's ERROR state) reads 0 bytes.
  if (n != static_cast<ssize_t>(sizeof words)) return {{}, EIO};
  return {{words[0], words[1], words[2]}, 0};
}

Delta delta_between(const Reading& previous, const Reading& current) {
  Delta delta;
  // Counts and times only grow for one descriptor; anything else is not a reading of the same
  // event, and counts nothing rather than a wrapped giant.
  if (current.value < previous.value || current.enabled_ns < previous.enabled_ns ||
      current.running_ns < previous.running_ns) {
    return delta;
  }
  const std::uint64_t count = current.value - previous.value;
  delta.raw_count = count;
  delta.enabled_ns = current.enabled_ns - previous.enabled_ns;
  delta.running_ns = current.running_ns - previous.running_ns;
  if (delta.running_ns >= delta.enabled_ns) {
    delta.count = count;
    return delta;
  }
  if (delta.running_ns == 0) {
    delta.not_counted = count == 0 && delta.enabled_ns > 0;
    delta.count = count;
    return delta;
  }
  delta.scaled = true;
  const unsigned __int128 scaled =
      static_cast<unsigned __int128>(count) * delta.enabled_ns / delta.running_ns;
  delta.count = scaled > UINT64_MAX ? UINT64_MAX : static_cast<std::uint64_t>(scaled);
  return delta;
}

}  // namespace hwperf::perf
