#include "collectors/region/segment_source.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <stdexcept>

#include "common/text.h"

namespace hwperf::region {
namespace {

SegmentOpening failed(Problem problem, std::string reason) {
  SegmentOpening opening;
  opening.problem = problem;
  opening.reason = std::move(reason);
  return opening;
}

struct DirCloser {
  void operator()(DIR* dir) const noexcept { ::closedir(dir); }
};

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

SegmentOpening find_process_segment(const std::string& procfs, pid_t pid) {
  const std::string directory = procfs + "/" + std::to_string(pid) + "/fd";
  std::unique_ptr<DIR, DirCloser> dir(::opendir(directory.c_str()));
  if (!dir) {
    return failed(errno == ENOENT ? Problem::not_found : Problem::open_failed,
                  directory + ": " + errno_text(errno));
  }
  const std::string wanted = segment_link_text();
  while (const dirent* entry = ::readdir(dir.get())) {
    if (entry->d_name[0] == '.') continue;
    const std::string link = directory + "/" + entry->d_name;
    char target[256];
    const ssize_t length = ::readlink(link.c_str(), target, sizeof target);
    if (length < 0 || static_cast<std::size_t>(length) != wanted.size() ||
        wanted.compare(0, wanted.size(), target, static_cast<std::size_t>(length)) != 0) {
      continue;
    }
    // O_PATH opens nothing: if the program put something else at that number since the
    // readlink, fstat below sees it before anything is opened for reading.
    UniqueFd path(::open(link.c_str(), O_PATH | O_CLOEXEC));
    if (!path.valid()) return failed(Problem::open_failed, link + ": " + errno_text(errno));
    struct stat info {};
    if (::fstat(path.get(), &info) != 0 || !S_ISREG(info.st_mode) || info.st_nlink != 0) {
      return failed(Problem::open_failed, link + ": not an unlinked regular file (a memfd)");
    }
    const std::string again = procfs + "/self/fd/" + std::to_string(path.get());
    UniqueFd fd(::open(again.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
    if (!fd.valid()) return failed(Problem::open_failed, link + ": " + errno_text(errno));
    return map_segment(std::move(fd), link);
  }
  return failed(Problem::not_found, "no " + wanted + " among " + directory);
}

}  // namespace hwperf::region
