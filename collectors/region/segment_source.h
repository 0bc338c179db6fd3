// Where a region segment comes from, opened so that a program cannot make the exporter (often
// root) open, block on or lose a mapping of anything it chose: the exporter's own memfd for
// `-- CMD`, or a memfd a process holds open under the library's fixed name, found under
// --path.procfs. Never a path the program wrote.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "collectors/region/region_segment_reader.h"
#include "common/region_segment_file.h"
#include "common/unique_fd.h"

namespace hwperf::region {

// Bigger than any segment the layout allows (about 420 KiB at its limits), small enough that a
// hostile file cannot make us map much.
inline constexpr std::size_t kMaxSegmentBytes = std::size_t{8} << 20;

// The link text of the library's memfd under /proc/PID/fd.
std::string segment_link_text();

struct OpenedSegment {
  UniqueFd fd;
  UniqueMapping mapping;  // read-only, MAP_SHARED, the whole file
};

struct SegmentOpening {
  std::optional<OpenedSegment> segment;
  Problem problem = Problem::none;  // not_found or open_failed when there is no segment
  std::string reason;
};

// Maps an open descriptor read-only after checking it: a regular file, sealed against shrinking
// and growing (so no page of the mapping can disappear under a read: no SIGBUS), non-empty and
// at most kMaxSegmentBytes. Takes ownership of `fd`. `what` names it in reasons.
SegmentOpening map_segment(UniqueFd fd, const std::string& what);

// A duplicate of a descriptor the exporter holds (the memfd it created for `-- CMD`), mapped as
// map_segment does.
SegmentOpening map_own_segment(int fd);

// The mount every memfd lives on (the kernel's internal shared-memory mount), as the `mnt_id:`
// line of /proc/PID/fdinfo/N shows it: learned from a memfd the exporter makes and looks at
// through `procfs`/self/fdinfo. nullopt when it cannot be learned (fdinfo without mnt_id, before
// Linux 3.15, or a procfs that does not show this process); then no candidate is ever opened.
std::optional<int> shared_memory_mount_id(const std::string& procfs);

// The mnt_id of `path` (an fdinfo file): procfs prints it from the open file's mount without
// asking the file's filesystem anything (fs/proc/fd.c seq_show), so a FUSE file whose server
// never answers cannot block this read.
std::optional<int> fdinfo_mount_id(const std::string& path);

// One look at part of a process's descriptors.
struct FdScan {
  // A descriptor whose link reads segment_link_text(): mapped, or refused with the reason.
  std::optional<SegmentOpening> found;
  std::int64_t resume = 0;  // the directory offset where the next look goes on
  bool finished = false;    // the last descriptor was looked at (or the directory is gone)
  std::size_t links = 0;    // descriptors whose link was read
  std::size_t opens = 0;    // files opened (O_PATH or for reading): 0 for every refused one
  int error = 0;            // opening the directory failed (ENOENT: the process is gone)
};

// Looks at up to `max_links` descriptors of process `pid` under `procfs`, from directory offset
// `resume` on (0: the first; an offset an earlier FdScan returned). A descriptor whose link reads
// segment_link_text() is refused before anything is opened unless fdinfo puts it on
// `shm_mount` (a memfd); then it is opened with O_PATH (which opens nothing: whatever the
// program put at that number since is only named), checked again on our own descriptor's
// fdinfo, checked to be an unlinked regular file, reopened read-only through our own fd
// directory and mapped as map_segment does.
FdScan scan_process_fds(const std::string& procfs, pid_t pid, std::int64_t resume,
                        std::size_t max_links, std::optional<int> shm_mount);

// All of `pid`'s descriptors at once (scan_process_fds without a limit), with the mount learned
// from `procfs`: for tests and tools; the process targets look through SegmentDiscovery.
SegmentOpening find_process_segment(const std::string& procfs, pid_t pid);

}  // namespace hwperf::region
