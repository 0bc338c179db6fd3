#include "collectors/region/segment_source.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <limits>
#include <stdexcept>
#include <vector>

#include "common/files.h"
#include "common/text.h"

namespace hwperf::region {
namespace {

SegmentOpening failed(Problem problem, std::string reason) {
  SegmentOpening opening;
  opening.problem = problem;
  opening.reason = std::move(reason);
  return opening;
}

// Descriptor `name` of `pid`, whose link read like the segment: refused unless it lives on the
// shared-memory mount, by what procfs says of it, before anything is opened.
SegmentOpening open_candidate(const std::string& procfs, pid_t pid, const char* name,
                              std::optional<int> shm_mount, std::size_t& opens) {
  const std::string process = procfs + "/" + std::to_string(pid);
  const std::string link = process + "/fd/" + name;
  if (!shm_mount) {
    return failed(Problem::open_failed, link +
                                            ": not opened: where memfds live is unknown (no "
                                            "mnt_id in " +
                                            procfs + "/self/fdinfo)");
  }
  const std::string info = process + "/fdinfo/" + name;
  const auto mount = fdinfo_mount_id(info);
  if (!mount || *mount != *shm_mount) {
    return failed(Problem::open_failed,
                  link + ": not opened: " + info + " puts it on mount " +
                      (mount ? std::to_string(*mount) : std::string("?")) +
                      ", not the kernel's shared-memory mount " + std::to_string(*shm_mount) +
                      " where every memfd lives (a file named like the segment elsewhere)");
  }
  // O_PATH opens nothing: if the program put something else at that number since fdinfo was
  // read, our descriptor names it without its filesystem being asked, and our own fdinfo says
  // where it lives before fstat asks anything.
  UniqueFd path(::open(link.c_str(), O_PATH | O_CLOEXEC));
  ++opens;
  if (!path.valid()) return failed(Problem::open_failed, link + ": " + errno_text(errno));
  const auto again = fdinfo_mount_id(procfs + "/self/fdinfo/" + std::to_string(path.get()));
  if (!again || *again != *shm_mount) {
    return failed(Problem::open_failed,
                  link + ": replaced by a file on another mount while it was being opened");
  }
  struct stat info_now {};
  if (::fstat(path.get(), &info_now) != 0 || !S_ISREG(info_now.st_mode) || info_now.st_nlink != 0) {
    return failed(Problem::open_failed, link + ": not an unlinked regular file (a memfd)");
  }
  const std::string ours = procfs + "/self/fd/" + std::to_string(path.get());
  UniqueFd fd(::open(ours.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  ++opens;
  if (!fd.valid()) return failed(Problem::open_failed, link + ": " + errno_text(errno));
  return map_segment(std::move(fd), link);
}

}  // namespace

std::string segment_link_text() {
  return std::string("/memfd:") + HWPERF_REGION_MEMFD_NAME + " (deleted)";
}

SegmentOpening map_segment(UniqueFd fd, const std::string& what) {
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) {
    return failed(Problem::open_failed, what + ": fstat: " + errno_text(errno));
  }
  if (!S_ISREG(info.st_mode)) return failed(Problem::open_failed, what + ": not a regular file");
  const int seals = ::fcntl(fd.get(), F_GET_SEALS);
  constexpr int needed = F_SEAL_SHRINK | F_SEAL_GROW;
  if (seals < 0 || (seals & needed) != needed) {
    return failed(Problem::open_failed,
                  what +
                      ": not sealed against shrinking and growing (F_SEAL_SHRINK | "
                      "F_SEAL_GROW): it could shrink under the mapping");
  }
  if (info.st_size <= 0 || static_cast<std::uint64_t>(info.st_size) > kMaxSegmentBytes) {
    return failed(Problem::open_failed, what + ": " + std::to_string(info.st_size) +
                                            " bytes, outside 1.." +
                                            std::to_string(kMaxSegmentBytes));
  }
  SegmentOpening opening;
  try {
    UniqueMapping mapping = map_file(fd.get(), static_cast<std::size_t>(info.st_size), false);
    opening.segment = OpenedSegment{std::move(fd), std::move(mapping)};
  } catch (const std::runtime_error& e) {
    return failed(Problem::open_failed, what + ": " + e.what());
  }
  return opening;
}

SegmentOpening map_own_segment(int fd) {
  UniqueFd copy(::fcntl(fd, F_DUPFD_CLOEXEC, 3));
  if (!copy.valid()) {
    return failed(Problem::open_failed, "the command's segment: dup: " + errno_text(errno));
  }
  return map_segment(std::move(copy), "the command's segment");
}

std::optional<int> fdinfo_mount_id(const std::string& path) {
  const auto text = read_small_file(path);
  if (!text.ok()) return std::nullopt;
  const std::string_view all = text.value;
  for (std::size_t at = 0; at < all.size();) {
    const std::size_t end = std::min(all.find('\n', at), all.size());
    const std::string_view line = all.substr(at, end - at);
    if (line.rfind("mnt_id:", 0) == 0) {
      const auto value = parse_u64(trim(line.substr(7)));
      if (!value || *value > static_cast<std::uint64_t>(std::numeric_limits<int>::max())) break;
      return static_cast<int>(*value);
    }
    at = end + 1;
  }
  return std::nullopt;
}

std::optional<int> shared_memory_mount_id(const std::string& procfs) {
  UniqueFd probe(::memfd_create("hwperf-mount-probe", MFD_CLOEXEC));
  if (!probe.valid()) return std::nullopt;
  return fdinfo_mount_id(procfs + "/self/fdinfo/" + std::to_string(probe.get()));
}

FdScan scan_process_fds(const std::string& procfs, pid_t pid, std::int64_t resume,
                        std::size_t max_links, std::optional<int> shm_mount) {
  FdScan scan;
  scan.resume = resume;
  const std::string directory = procfs + "/" + std::to_string(pid) + "/fd";
  UniqueFd dir(::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid() || (resume != 0 && ::lseek(dir.get(), resume, SEEK_SET) < 0)) {
    scan.error = errno;
    scan.finished = true;
    return scan;
  }
  const std::string wanted = segment_link_text();
  // Room for about max_links entries (32 bytes each for names of up to 12 digits): procfs
  // builds an entry for each descriptor it returns, so it is asked for no more than are read.
  std::vector<char> buffer(std::clamp<std::size_t>(max_links, 16, 1024) * 32);
  while (scan.links < max_links) {
    const ssize_t bytes = ::getdents64(dir.get(), buffer.data(), buffer.size());
    if (bytes <= 0) {
      scan.error = bytes < 0 ? errno : 0;
      scan.finished = true;
      return scan;
    }
    for (ssize_t at = 0; at < bytes && scan.links < max_links;) {
      const auto* entry = reinterpret_cast<const dirent64*>(buffer.data() + at);
      at += entry->d_reclen;
      scan.resume = entry->d_off;  // where the entry after this one starts
      if (entry->d_name[0] == '.') continue;
      ++scan.links;
      char target[256];
      const ssize_t length = ::readlinkat(dir.get(), entry->d_name, target, sizeof target);
      if (length < 0 || static_cast<std::size_t>(length) != wanted.size() ||
          wanted.compare(0, wanted.size(), target, static_cast<std::size_t>(length)) != 0) {
        continue;
      }
      scan.found = open_candidate(procfs, pid, entry->d_name, shm_mount, scan.opens);
      return scan;
    }
  }
  return scan;
}

SegmentOpening find_process_segment(const std::string& procfs, pid_t pid) {
  FdScan scan = scan_process_fds(procfs, pid, 0, std::numeric_limits<std::size_t>::max(),
                                 shared_memory_mount_id(procfs));
  if (scan.found) return std::move(*scan.found);
  const std::string directory = procfs + "/" + std::to_string(pid) + "/fd";
  if (scan.error != 0) {
    return failed(scan.error == ENOENT ? Problem::not_found : Problem::open_failed,
                  directory + ": " + errno_text(scan.error));
  }
  return failed(Problem::not_found, "no " + segment_link_text() + " among " + directory);
}

}  // namespace hwperf::region
