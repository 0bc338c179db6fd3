// Finding the segments of a target's processes under --path.procfs without letting a process
// make the rescan expensive: a process may hold a million descriptors and no segment, and every
// descriptor is a link to read. A process new to the rescan gets a first look at its first
// descriptors (the library makes its segment at load, so it is among them); after that, each
// process is looked at in slices from where the last one stopped, within a budget of links per
// rescan for all of them; and a process whose descriptors were all looked at without a segment
// is looked at again only after a back-off (2, 4, 8 ... up to max_backoff rescans), so a program
// that execs another one that uses the library is found within that many rescans.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "collectors/region/segment_source.h"

namespace hwperf::region {

// A process whose segment is read: its pid and start time (pids are reused).
using ProcessKey = std::pair<pid_t, std::uint64_t>;

struct DiscoveryLimits {
  std::size_t first_look_links = 32;    // per process new to the rescan, beside the budget
  std::size_t links_per_rescan = 4096;  // the budget: about 12 ms of procfs here (3 us a link)
  std::size_t links_per_process = 512;  // a slice: several processes go on in one rescan
  unsigned max_backoff = 32;            // rescans: 96 s at the default 3 s interval
};

struct DiscoveryStats {
  std::uint64_t links = 0;  // descriptor links read, since the start
  std::uint64_t opens = 0;  // files opened (O_PATH or for reading)
};

class SegmentDiscovery {
 public:
  // `shm_mount`: shared_memory_mount_id(procfs), looked up by the caller once.
  SegmentDiscovery(std::string procfs, std::optional<int> shm_mount, DiscoveryLimits limits = {});

  // One rescan over the processes that have no segment yet (the others are forgotten here):
  // what was found this time, opened or refused, by process. A process whose directory is gone
  // is forgotten.
  std::vector<std::pair<ProcessKey, SegmentOpening>> update(const std::vector<ProcessKey>& looking);
  const DiscoveryStats& stats() const { return stats_; }
  std::size_t looking() const { return searches_.size(); }

 private:
  struct Search {
    std::int64_t resume = 0;  // the fd directory's offset where the next slice starts
    unsigned passes = 0;      // complete looks that found nothing
    std::uint64_t due = 0;    // the rescan from which the next slice may run
    bool started = false;     // had its first look
    bool done = false;        // found, refused or gone: forgotten at the end of the rescan
  };
  // One slice of at most `links`; what it found goes to `found`. Returns the links read.
  std::size_t look(const ProcessKey& key, Search& search, std::size_t links,
                   std::vector<std::pair<ProcessKey, SegmentOpening>>& found);

  std::string procfs_;
  std::optional<int> shm_mount_;
  DiscoveryLimits limits_;
  std::map<ProcessKey, Search> searches_;
  std::uint64_t rescans_ = 0;
  DiscoveryStats stats_;
};

}  // namespace hwperf::region
