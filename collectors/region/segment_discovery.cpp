#include "collectors/region/segment_discovery.h"

#include <algorithm>
#include <cerrno>
#include <iterator>

#include "common/text.h"

namespace hwperf::region {

SegmentDiscovery::SegmentDiscovery(std::string procfs, std::optional<int> shm_mount,
                                   DiscoveryLimits limits)
    : procfs_(std::move(procfs)), shm_mount_(shm_mount), limits_(limits) {}

std::size_t SegmentDiscovery::look(const ProcessKey& key, Search& search, std::size_t links,
                                   std::vector<std::pair<ProcessKey, SegmentOpening>>& found) {
  FdScan scan = scan_process_fds(procfs_, key.first, search.resume, links, shm_mount_);
  stats_.links += scan.links;
  stats_.opens += scan.opens;
  search.started = true;
  if (scan.error != 0 && scan.error != ENOENT) {
    // Unreadable (another user's process without ptrace access): reported as the segment's
    // problem, as a refused candidate is, and not looked at again.
    SegmentOpening refused;
    refused.problem = Problem::open_failed;
    refused.reason = procfs_ + "/" + std::to_string(key.first) + "/fd: " + errno_text(scan.error);
    scan.found = std::move(refused);
  }
  if (scan.found) {
    found.emplace_back(key, std::move(*scan.found));
    search.done = true;
  } else if (scan.error == ENOENT) {
    search.done = true;  // gone: the next rescan no longer lists it
  } else if (scan.finished) {
    // Every descriptor looked at, none the segment: again after 2, 4, 8 ... rescans.
    search.resume = 0;
    search.passes = std::min(search.passes + 1, 31u);
    search.due =
        rescans_ + std::min<std::uint64_t>(std::uint64_t{1} << search.passes, limits_.max_backoff);
  } else {
    search.resume = scan.resume;
    search.due = rescans_ + 1;
  }
  return scan.links;
}

std::vector<std::pair<ProcessKey, SegmentOpening>> SegmentDiscovery::update(
    const std::vector<ProcessKey>& looking) {
  ++rescans_;
  std::map<ProcessKey, Search> kept;
  for (const auto& key : looking) {
    const auto it = searches_.find(key);
    kept.emplace(key, it != searches_.end() ? it->second : Search{});
  }
  searches_ = std::move(kept);
  std::vector<std::pair<ProcessKey, SegmentOpening>> found;
  // A process new to this rescan: its first descriptors, where the library put its segment at
  // load, whatever the others cost.
  std::vector<std::pair<std::uint64_t, ProcessKey>> due;
  for (auto& [key, search] : searches_) {
    if (!search.started) {
      look(key, search, limits_.first_look_links, found);
    } else if (search.due <= rescans_) {
      due.emplace_back(search.due, key);
    }
  }
  // Then the others, longest due first, within the rescan's budget.
  std::sort(due.begin(), due.end());
  std::size_t budget = limits_.links_per_rescan;
  for (const auto& entry : due) {
    if (budget == 0) break;
    Search& search = searches_.at(entry.second);
    budget -= std::min(
        budget, look(entry.second, search, std::min(budget, limits_.links_per_process), found));
  }
  for (auto it = searches_.begin(); it != searches_.end();) {
    it = it->second.done ? searches_.erase(it) : std::next(it);
  }
  return found;
}

}  // namespace hwperf::region
