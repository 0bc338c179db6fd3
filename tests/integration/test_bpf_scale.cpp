// The BPF engine at scale on this machine's kernel: the descriptors it holds whatever the number
// of cgroups (256 here, 3 events), and a churn of 2,500 short-lived cgroups through maps sized for
// 1,024 that leaves no entry behind. Root runs these; without BPF they fail naming what is missing.
#include "tests/catch.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "tests/support/bpf_live_support.h"

using namespace hwperf;
using namespace hwperf::test::bpf_live;
using hwperf::test::cgroup_live::TestCgroup;
using hwperf::test::cgroup_live::unique_name;

TEST_CASE("BPF: (events + 1) x CPUs perf descriptors and a fixed few BPF ones for 256 cgroups",
          "[bpf]") {
  const auto h = v2_hierarchy();
  const TestCgroup parent(h.root / unique_name("bpf-fds"));
  auto before = descriptor_census();
  auto engine = open_engine(options_for({{cpu_clock()}, {page_faults()}, {msr_tsc()}}));
  const std::size_t cpus = engine.cpus().size();
  auto opened = descriptor_census();
  const unsigned perf_fds = opened["perf_event"] - before["perf_event"];
  const unsigned bpf_fds = opened["bpf"] - before["bpf"];
  INFO(perf_fds << " perf descriptors and " << bpf_fds << " BPF ones on " << cpus
                << " CPUs; perf mode would hold 256 x 3 x " << cpus << " = " << 256 * 3 * cpus);
  CHECK(perf_fds == (3 + 1) * cpus);
  CHECK(engine.perf_descriptors() == perf_fds);
  // Eight maps, three programs, the object's BTF, the sched_switch and rmdir attachments: none
  // per CPU or cgroup.
  CHECK(bpf_fds <= 14);

  std::vector<std::unique_ptr<TestCgroup>> cgroups;
  std::vector<std::uint64_t> ids;
  for (int i = 0; i < 256; ++i) {
    cgroups.push_back(std::make_unique<TestCgroup>(parent.path() / ("c" + std::to_string(i))));
    ids.push_back(id_of(cgroups.back()->path()));
    REQUIRE(engine.track(ids.back()) == 0);
    run_briefly_in(cgroups.back()->path());
  }
  const EngineReading reading = engine.read();
  std::size_t own = 0, tracked = 0;
  for (const std::uint64_t id : ids) {
    own += find(reading.own, id) != nullptr ? 1 : 0;
    tracked += find(reading.subtree, id) != nullptr ? 1 : 0;
  }
  // Every cgroup counted from its first switch, with no descriptor of its own.
  CHECK(own == 256);
  CHECK(tracked == 256);
  CHECK(reading.not_counted == 0);
  auto after = descriptor_census();
  CHECK(after["perf_event"] == opened["perf_event"]);
  CHECK(after["bpf"] == opened["bpf"]);
}

TEST_CASE("BPF: a churn of 2,500 short-lived cgroups through 1,024 entries leaves none behind",
          "[bpf]") {
  const auto h = v2_hierarchy();
  const TestCgroup parent(h.root / unique_name("bpf-churn"));
  EngineOptions options = options_for({{cpu_clock()}});
  // Room for the cgroups of the whole machine (the engine counts them all: other tests make
  // some, 256 at once for the descriptor test) and this test's, 200 at most at once, yet fewer
  // than it churns through.
  options.max_cgroups = 1024;
  auto engine = open_engine(options);
  std::set<std::uint64_t> churned, reported_removed;
  const auto collect = [&](const EngineReading& reading) {
    for (const auto& entry : reading.own) {
      if (entry.removed && churned.count(entry.id) != 0) reported_removed.insert(entry.id);
    }
    return reading;
  };
  // 25 rounds of 100 cgroups, each made, run in by a child that exits at once, and removed
  // before the engine is read: an entry stays for two reads, so 200 at most are kept at once.
  for (int round = 0; round < 25; ++round) {
    for (int i = 0; i < 100; ++i) {
      const fs::path path = parent.path() / ("r" + std::to_string(round) + "-" + std::to_string(i));
      REQUIRE(::mkdir(path.c_str(), 0755) == 0);
      churned.insert(id_of(path));
      run_briefly_in(path);
      REQUIRE(::rmdir(path.c_str()) == 0);
    }
    collect(engine.read());
  }
  collect(engine.read());
  const EngineReading last = collect(engine.read());
  std::size_t left = 0;
  for (const auto& entry : last.own) left += churned.count(entry.id);
  INFO(reported_removed.size() << " of " << churned.size() << " cgroups reported removed; "
                               << last.own.size() << " entries left, " << left
                               << " of them churned; " << last.not_counted
                               << " switches not counted");
  CHECK(churned.size() == 2500);
  CHECK(reported_removed.size() == churned.size());
  CHECK(left == 0);
  CHECK(last.not_counted == 0);
}

TEST_CASE("BPF: a cgroup that finds the count map full is given to no cgroup, not lost", "[bpf]") {
  const auto h = v2_hierarchy();
  const TestCgroup parent(h.root / unique_name("bpf-full"));
  const TestCgroup filler(parent.path() / "filler");
  auto options = options_for({{cpu_clock()}});
  // One entry, which the first cgroup to switch after the start takes (the filler's, or one of
  // the system's): the busy cgroup, made after, finds no room.
  options.max_cgroups = 1;
  auto engine = open_engine(options);
  run_briefly_in(filler.path());
  const TestCgroup busy(parent.path() / "busy");
  const double lost_before = unattributed_seconds(engine.read());
  test::cgroup_live::Spinner spinner(300);
  spinner.place_in(busy.path());
  const double used = spinner.run();
  const EngineReading reading = engine.read();
  const double lost = unattributed_seconds(reading) - lost_before;
  INFO("the busy child used " << used << " s; " << lost << " s given to no cgroup; "
                              << reading.not_counted << " switches found the map full");
  CHECK(reading.own.size() == 1);
  CHECK(find(reading.own, id_of(busy.path())) == nullptr);
  CHECK(reading.not_counted > 0);
  CHECK(lost >= used * 0.9);
}
