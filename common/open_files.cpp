#include "common/open_files.h"

#include <sys/resource.h>

#include <climits>
#include <filesystem>
#include <system_error>

namespace hwperf {

unsigned long raise_open_file_limit() noexcept {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  if (limit.rlim_cur != limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  if (limit.rlim_cur == RLIM_INFINITY) return ULONG_MAX;
  return static_cast<unsigned long>(limit.rlim_cur);
}

unsigned long open_file_count() {
  unsigned long count = 0;
  std::error_code error;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", error);
       !error && it != std::filesystem::directory_iterator(); it.increment(error)) {
    ++count;
  }
  return count;
}

std::string open_file_shortfall(const std::vector<FileNeed>& needs, unsigned long limit) {
  unsigned long total = 0;
  std::string parts;
  for (const auto& need : needs) {
    if (need.count == 0) continue;
    total += need.count;
    parts += (parts.empty() ? "" : ", ") + need.what + ": " + std::to_string(need.count);
  }
  if (total <= limit) return {};
  return "the configuration needs about " + std::to_string(total) + " open files (" + parts +
         "), but the open-file limit (RLIMIT_NOFILE) is " + std::to_string(limit) +
         ", even with the soft limit raised to the hard one; PAPI would report the shortage as "
         "event conflicts and drop events. Remedy: raise the limit to at least " +
         std::to_string(total) +
         " (systemd: LimitNOFILE=; shell: ulimit -n; docker/podman: --ulimit nofile=N:N; "
         "Kubernetes: the container runtime's default), or count fewer events or CPUs";
}

}  // namespace hwperf
