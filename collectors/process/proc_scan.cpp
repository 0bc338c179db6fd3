#include "collectors/process/proc_scan.h"

#include <dirent.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <sstream>

#include "common/files.h"
#include "common/text.h"

namespace hwperf::process {
namespace {

std::vector<pid_t> numeric_entries(const std::string& directory) {
  std::vector<pid_t> ids;
  DIR* dir = ::opendir(directory.c_str());
  if (dir == nullptr) return ids;
  while (const dirent* entry = ::readdir(dir)) {
    const auto id = parse_u64(entry->d_name);
    if (id && *id > 0 && *id <= 0x7fffffff) ids.push_back(static_cast<pid_t>(*id));
  }
  ::closedir(dir);
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace

std::optional<ProcStat> parse_proc_stat(const std::string& text) {
  const auto open = text.find('(');
  const auto close = text.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return std::nullopt;
  ProcStat stat;
  const auto pid = parse_u64(trim(std::string_view(text).substr(0, open)));
  if (!pid) return std::nullopt;
  stat.identity.pid = static_cast<pid_t>(*pid);
  stat.comm = text.substr(open + 1, close - open - 1);
  // After the comm: state (field 3), ppid (4), ... starttime (22).
  std::istringstream rest(text.substr(close + 1));
  std::string field;
  std::vector<std::string> fields;
  while (fields.size() < 20 && rest >> field) fields.push_back(field);
  if (fields.size() < 20 || fields[0].size() != 1) return std::nullopt;
  stat.state = fields[0][0];
  const auto ppid = parse_u64(fields[1]);
  const auto start = parse_u64(fields[19]);
  if (!ppid || !start) return std::nullopt;
  stat.ppid = static_cast<pid_t>(*ppid);
  stat.identity.start_ticks = *start;
  return stat;
}

std::optional<ProcStat> read_proc_stat(const std::string& procfs, pid_t pid, pid_t tid) {
  const std::string path = procfs + "/" + std::to_string(pid) +
                           (tid != 0 ? "/task/" + std::to_string(tid) : std::string()) + "/stat";
  const auto text = read_small_file(path);
  if (!text.ok()) return std::nullopt;
  return parse_proc_stat(text.value);
}

std::vector<pid_t> list_processes(const std::string& procfs) { return numeric_entries(procfs); }

std::vector<ProcStat> read_all_proc_stats(const std::string& procfs) {
  std::vector<ProcStat> stats;
  DIR* dir = ::opendir(procfs.c_str());
  if (dir == nullptr) return stats;
  const int dir_fd = ::dirfd(dir);
  char path[300];   // d_name is at most 255 bytes
  char text[1024];  // a stat line is about 300 bytes; comm is at most 64
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] < '1' || entry->d_name[0] > '9') continue;
    std::snprintf(path, sizeof path, "%s/stat", entry->d_name);
    // Non-blocking: under --path.procfs a fixture tree could hold a FIFO.
    const int fd = ::openat(dir_fd, path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
    if (fd < 0) continue;
    const ssize_t n = ::read(fd, text, sizeof text - 1);
    ::close(fd);
    if (n <= 0) continue;
    if (auto stat = parse_proc_stat(std::string(text, static_cast<std::size_t>(n)))) {
      stats.push_back(std::move(*stat));
    }
  }
  ::closedir(dir);
  return stats;
}

std::vector<pid_t> list_threads(const std::string& procfs, pid_t pid) {
  return numeric_entries(procfs + "/" + std::to_string(pid) + "/task");
}

std::string read_exe(const std::string& procfs, pid_t pid) {
  const std::string link = procfs + "/" + std::to_string(pid) + "/exe";
  char buffer[4096];
  const ssize_t n = ::readlink(link.c_str(), buffer, sizeof buffer);
  if (n <= 0) return {};
  return std::string(buffer, static_cast<std::size_t>(n));
}

std::string read_cmdline(const std::string& procfs, pid_t pid) {
  auto text = read_small_file(procfs + "/" + std::to_string(pid) + "/cmdline");
  if (!text.ok()) return {};
  std::string& line = text.value;
  while (!line.empty() && line.back() == '\0') line.pop_back();
  std::replace(line.begin(), line.end(), '\0', ' ');
  return line;
}

std::uint64_t boot_ticks_now() {
  timespec now{};
  ::clock_gettime(CLOCK_BOOTTIME, &now);
  const auto hz = static_cast<std::uint64_t>(::sysconf(_SC_CLK_TCK));
  return static_cast<std::uint64_t>(now.tv_sec) * hz +
         static_cast<std::uint64_t>(now.tv_nsec) / (1000000000u / hz);
}

PidOrErrno read_pidfile(const std::string& path) {
  const auto text = read_regular_file(path, 64);
  if (!text.ok()) return {0, text.error == EFBIG ? EINVAL : text.error};
  const auto pid = parse_u64(trim(text.value));
  if (!pid || *pid == 0 || *pid > 0x7fffffff) return {0, EINVAL};
  return {static_cast<pid_t>(*pid), 0};
}

}  // namespace hwperf::process
