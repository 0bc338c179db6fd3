// What the process targets read of procfs (under --path.procfs): the processes and threads there
// are, and each one's identity. A pid alone is no identity: the kernel hands a freed pid to the
// next process, so a process is (pid, start time), and a target never counts a stranger that
// inherited a number.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hwperf::process {

struct ProcessIdentity {
  pid_t pid = 0;
  std::uint64_t start_ticks = 0;  // /proc/PID/stat field 22: clock ticks after boot
  bool operator==(const ProcessIdentity& other) const {
    return pid == other.pid && start_ticks == other.start_ticks;
  }
  bool operator<(const ProcessIdentity& other) const {
    return pid != other.pid ? pid < other.pid : start_ticks < other.start_ticks;
  }
};

struct ProcStat {
  ProcessIdentity identity;
  std::string comm;
  pid_t ppid = 0;
  char state = '?';  // 'Z' for a zombie: gone but for its exit status
};

// Parses the text of /proc/PID/stat (comm may hold spaces and parentheses: it ends at the last
// ')'). Nothing when the text is not such a line.
std::optional<ProcStat> parse_proc_stat(const std::string& text);
// /proc/PID/stat, or /proc/PID/task/TID/stat when `tid` is given.
std::optional<ProcStat> read_proc_stat(const std::string& procfs, pid_t pid, pid_t tid = 0);

// Every process's stat, by pid: one openat/read/close each under one open directory, since the
// background rescan reads them all every interval.
std::vector<ProcStat> read_all_proc_stats(const std::string& procfs);

// Numeric entries of /proc (processes) and of /proc/PID/task (threads), ascending.
std::vector<pid_t> list_processes(const std::string& procfs);
std::vector<pid_t> list_threads(const std::string& procfs, pid_t pid);

std::string read_exe(const std::string& procfs, pid_t pid);      // "" when unreadable
std::string read_cmdline(const std::string& procfs, pid_t pid);  // arguments joined by spaces

// Now, in the clock of ProcessIdentity::start_ticks (CLOCK_BOOTTIME in USER_HZ ticks, as the
// kernel reports start times since Linux 5.5).
std::uint64_t boot_ticks_now();

// A pidfile's pid: one decimal number, optionally followed by a newline. Errno (ENOENT, EACCES,
// EINVAL for anything else) otherwise.
struct PidOrErrno {
  pid_t pid = 0;
  int error = 0;
};
PidOrErrno read_pidfile(const std::string& path);

}  // namespace hwperf::process
