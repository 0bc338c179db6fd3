// How the process targets look for region segments (collectors/region/segment_discovery.h), in
// fixture procfs trees: /PID/fd/N symlinks whose text is what the kernel's links read, and
// /PID/fdinfo/N files with the mount. What is counted is what the discovery did: links read,
// files opened.
#include "tests/catch.hpp"

#include <filesystem>
#include <string>
#include <vector>

#include "collectors/region/segment_discovery.h"
#include "tests/support/support.h"

using namespace hwperf;
using namespace hwperf::region;

namespace {

constexpr int kShmMount = 7;  // where the fixture's memfds live

// A fixture procfs: each process has `descriptors` sockets, and a segment-named link at
// `segment_fd` (>= 0) whose fdinfo puts it on `mount`.
struct ProcessTree {
  test::TempDir dir;
  void add(pid_t pid, int descriptors, int segment_fd = -1, int mount = kShmMount) const {
    const auto fd = dir.path() / std::to_string(pid) / "fd";
    std::filesystem::create_directories(fd);
    for (int n = 0; n < descriptors; ++n) {
      std::filesystem::create_symlink("socket:[" + std::to_string(1000 + n) + "]",
                                      fd / std::to_string(n));
    }
    if (segment_fd >= 0) {
      std::filesystem::remove(fd / std::to_string(segment_fd));
      std::filesystem::create_symlink(segment_link_text(), fd / std::to_string(segment_fd));
      dir.write(std::to_string(pid) + "/fdinfo/" + std::to_string(segment_fd),
                "pos:\t0\nflags:\t0100002\nmnt_id:\t" + std::to_string(mount) + "\nino:\t42\n");
    }
  }
  std::string procfs() const { return dir.path().string(); }
};

std::vector<ProcessKey> keys(const std::vector<pid_t>& pids) {
  std::vector<ProcessKey> out;
  for (const pid_t pid : pids) out.emplace_back(pid, 100);
  return out;
}

}  // namespace

TEST_CASE("A process without a segment is not looked at again at the next rescan", "[region]") {
  ProcessTree tree;
  const std::vector<pid_t> pids = {101, 102, 103};
  constexpr int kDescriptors = 300;
  for (const pid_t pid : pids) tree.add(pid, kDescriptors);
  DiscoveryLimits limits;
  limits.first_look_links = kDescriptors + 1;  // the whole directory at the first look
  SegmentDiscovery discovery(tree.procfs(), kShmMount, limits);
  CHECK(discovery.update(keys(pids)).empty());
  const DiscoveryStats first = discovery.stats();
  CHECK(first.links == pids.size() * kDescriptors);
  CHECK(first.opens == 0);
  // Every descriptor was looked at: the next rescan reads no link and opens nothing.
  CHECK(discovery.update(keys(pids)).empty());
  CHECK(discovery.stats().links == first.links);
  CHECK(discovery.stats().opens == 0);
  // Then again after the back-off, once more all of them.
  for (int rescan = 0; rescan < 2; ++rescan) discovery.update(keys(pids));
  CHECK(discovery.stats().links == 2 * first.links);
}

TEST_CASE("A rescan reads a bounded number of links, a new process's first", "[region]") {
  ProcessTree tree;
  std::vector<pid_t> pids;
  constexpr int kProcesses = 30, kDescriptors = 200;
  for (pid_t pid = 200; pid < 200 + kProcesses; ++pid) {
    tree.add(pid, kDescriptors);
    pids.push_back(pid);
  }
  DiscoveryLimits limits;
  limits.first_look_links = 10;
  limits.links_per_rescan = 1000;
  limits.links_per_process = 100;
  SegmentDiscovery discovery(tree.procfs(), kShmMount, limits);
  // The first look of each, then nothing: the budget is for processes looked at before.
  discovery.update(keys(pids));
  const std::uint64_t first_looks = kProcesses * limits.first_look_links;
  CHECK(discovery.stats().links == first_looks);
  // A process started now, its segment among its first descriptors, as the library makes it at
  // load, is found at once while the others go on within the budget.
  tree.add(500, 5, 3);
  pids.push_back(500);
  const auto found = discovery.update(keys(pids));
  REQUIRE(found.size() == 1);
  CHECK(found[0].first.first == 500);
  CHECK(found[0].second.problem == Problem::open_failed);  // a fixture link: nothing to open
  const std::uint64_t second = discovery.stats().links - first_looks;
  CHECK(second > limits.links_per_rescan);
  CHECK(second <= limits.links_per_rescan + 5);
  pids.pop_back();  // a process with a segment is no longer looked for
  // The others go on, the budget's worth at each rescan while descriptors are left to look at.
  for (int rescan = 0; rescan < 4; ++rescan) {
    const std::uint64_t before = discovery.stats().links;
    discovery.update(keys(pids));
    CHECK(discovery.stats().links - before == limits.links_per_rescan);
  }
}

TEST_CASE("A file named like the segment on another mount is refused before any open", "[region]") {
  // As a FUSE file named "/memfd:hwperf-regions" would be: its link reads like the segment, its
  // fdinfo (procfs, which asks the filesystem nothing) puts it elsewhere.
  ProcessTree tree;
  tree.add(300, 10, 4, kShmMount + 20);
  SegmentDiscovery discovery(tree.procfs(), kShmMount);
  const auto found = discovery.update(keys({300}));
  REQUIRE(found.size() == 1);
  const SegmentOpening& opening = found[0].second;
  CHECK_FALSE(opening.segment);
  CHECK(opening.problem == Problem::open_failed);
  CHECK_THAT(opening.reason, Catch::Contains("not the kernel's shared-memory mount"));
  CHECK_THAT(opening.reason, Catch::Contains(std::to_string(kShmMount + 20)));
  CHECK(discovery.stats().opens == 0);
  SECTION("and nothing is opened when where memfds live is unknown") {
    SegmentDiscovery blind(tree.procfs(), std::nullopt);
    const auto refused = blind.update(keys({300}));
    REQUIRE(refused.size() == 1);
    CHECK_THAT(refused[0].second.reason, Catch::Contains("not opened"));
    CHECK(blind.stats().opens == 0);
  }
}

TEST_CASE("A process that is gone is forgotten", "[region]") {
  ProcessTree tree;
  tree.add(400, 5);
  SegmentDiscovery discovery(tree.procfs(), kShmMount);
  discovery.update(keys({400, 401}));
  CHECK(discovery.looking() == 1);
  discovery.update({});
  CHECK(discovery.looking() == 0);
}
