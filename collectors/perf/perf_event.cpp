#include "collectors/perf/perf_event.h"

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "common/sysctl.h"

namespace hwperf::perf {

namespace {

long open_event(const EventEncoding& event, pid_t pid, int cpu, const OpenOptions& options,
                int group_fd, std::uint64_t read_format, bool leader_disabled = false) {
  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.type = event.type;
  attr.config = event.config;
  attr.config1 = event.config1;
  attr.config2 = event.config2;
  attr.exclude_user = event.exclude_user ? 1 : 0;
  attr.exclude_kernel = event.exclude_kernel ? 1 : 0;
  attr.exclude_hv = event.exclude_hv ? 1 : 0;
  attr.read_format = read_format;
  attr.inherit = options.inherit ? 1 : 0;
  // A member follows its leader: only the leader is disabled until exec (the kernel enables the
  // group with it).
  const bool leader = group_fd < 0;
  attr.disabled = (options.enable_on_exec || leader_disabled) && leader ? 1 : 0;
  attr.enable_on_exec = options.enable_on_exec && leader ? 1 : 0;
  const unsigned long flags = PERF_FLAG_FD_CLOEXEC | (options.cgroup ? PERF_FLAG_PID_CGROUP : 0);
  return ::syscall(SYS_perf_event_open, &attr, pid, cpu, group_fd, flags);
}

constexpr std::uint64_t kTimes = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;

// 2^20 events: far more than any PMU counts at once, and a bound on the read buffer.
constexpr std::size_t kMaxGroupEvents = 1u << 20;

}  // namespace

OrErrno<UniqueFd> open_counter(const EventEncoding& event, pid_t pid, int cpu,
                               const OpenOptions& options) {
  const long fd = open_event(event, pid, cpu, options, -1, kTimes);
  if (fd < 0) return {UniqueFd{}, errno};
  return {UniqueFd(static_cast<int>(fd)), 0};
}

OrErrno<CounterGroup> CounterGroup::open(const std::vector<EventEncoding>& events, pid_t pid,
                                         int cpu, const OpenOptions& options) {
  CounterGroup group;
  if (events.empty() || events.size() > kMaxGroupEvents) return {std::move(group), EINVAL};
  for (std::size_t i = 0; i < events.size(); ++i) {
    const int leader = group.fds_.empty() ? -1 : group.fds_.front().get();
    const long fd =
        open_event(events[i], pid, cpu, options, leader, kTimes | PERF_FORMAT_GROUP, true);
    if (fd < 0) {
      const int error = errno;
      CounterGroup failed;
      failed.failed_event_ = i;
      return {std::move(failed), error};
    }
    group.fds_.emplace_back(static_cast<int>(fd));
  }
  // The leader is opened disabled and enabled once every member is in, as perf stat does: a
  // member added to a group already counting is not scheduled in until the group is (Linux 6.x
  // reschedules only the new member's PMU, so the software events of a system-wide group led by
  // task-clock, a PMU of its own, counted nothing). With enable_on_exec the exec enables it.
  if (!options.enable_on_exec && ::ioctl(group.fds_.front().get(), PERF_EVENT_IOC_ENABLE, 0) != 0) {
    return {CounterGroup{}, errno};
  }
  return {std::move(group), 0};
}

OrErrno<GroupReading> CounterGroup::read() const {
  if (fds_.empty()) return {{}, EBADF};
  // PERF_FORMAT_GROUP with both times: nr, time_enabled, time_running, then one value each.
  std::vector<std::uint64_t> words(3 + fds_.size());
  const ssize_t n = ::read(fds_.front().get(), words.data(), words.size() * sizeof words[0]);
  if (n < 0) return {{}, errno};
  if (n != static_cast<ssize_t>(words.size() * sizeof words[0]) || words[0] != fds_.size()) {
    return {{}, EIO};  // a group in the kernel's ERROR state reads 0 bytes
  }
  GroupReading reading;
  reading.enabled_ns = words[1];
  reading.running_ns = words[2];
  reading.values.assign(words.begin() + 3, words.end());
  return {std::move(reading), 0};
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

GroupDelta delta_between(const GroupReading& previous, const GroupReading& current) {
  GroupDelta group;
  const std::size_t events = current.values.size();
  group.counts.assign(events, 0);
  group.raw_counts.assign(events, 0);
  // A first reading (no previous values) counts from zero.
  const bool first = previous.values.empty();
  if (!first && previous.values.size() != events) return group;
  for (std::size_t i = 0; i < events; ++i) {
    const Delta delta = delta_between(
        Reading{first ? 0 : previous.values[i], previous.enabled_ns, previous.running_ns},
        Reading{current.values[i], current.enabled_ns, current.running_ns});
    group.counts[i] = delta.count;
    group.raw_counts[i] = delta.raw_count;
    group.enabled_ns = delta.enabled_ns;
    group.running_ns = delta.running_ns;
    group.scaled = group.scaled || delta.scaled;
  }
  return group;
}

std::string paranoid_setting(const std::string& procfs) {
  return read_sysctl(procfs, "kernel.perf_event_paranoid");
}

std::string system_wide_permission_remedy(const std::string& paranoid) {
  return "needs kernel.perf_event_paranoid <= 0 (it is " + paranoid +
         " here) or CAP_PERFMON (CAP_SYS_ADMIN before Linux 5.8): run `sysctl "
         "kernel.perf_event_paranoid=0`, give the exporter CAP_PERFMON (setcap cap_perfmon+ep, or "
         "--cap-add PERFMON) or run it as root; in a container also run it --privileged or with a "
         "seccomp profile that allows perf_event_open";
}

}  // namespace hwperf::perf
