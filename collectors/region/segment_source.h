// Where a region segment comes from, opened so that a program cannot make the exporter (often
// root) open, block on or lose a mapping of anything it chose: the exporter's own memfd for
// `-- CMD`, or a memfd a process holds open under the library's fixed name, found under
// --path.procfs. Never a path the program wrote.
#pragma once

#include <sys/types.h>

#include <cstddef>
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

// The first descriptor of process `pid` whose link reads segment_link_text(), under `procfs`:
// opened with O_PATH (opening nothing: no device or FIFO the program swapped in meanwhile is
// opened for real), checked to be a regular file with no name left, then reopened read-only
// through our own fd directory and mapped as map_segment does.
SegmentOpening find_process_segment(const std::string& procfs, pid_t pid);

}  // namespace hwperf::region
