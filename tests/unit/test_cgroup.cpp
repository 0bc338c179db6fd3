// collectors/cgroup: where perf_event looks (cgroups + mountinfo) and container identity from
// paths.
#include "tests/catch.hpp"

#include <unistd.h>

#include <filesystem>
#include <initializer_list>
#include <string>
#include <vector>

#include "collectors/papi/papi_presets.h"
#include "collectors/cgroup/cgroup_collector.h"
#include "collectors/cgroup/discovery.h"
#include "collectors/cgroup/hierarchy.h"
#include "collectors/cgroup/identity.h"
#include "config/errors.h"
#include "collectors/configuration.h"
#include "tests/support/support.h"
#include "tests/support/counting_fakes.h"

using namespace hwperf::cgroup;
using Kind = PerfEventHierarchy::Kind;

namespace {
const char* cgroups_v2 =
    "#subsys_name\thierarchy\tnum_cgroups\tenabled\ncpu\t0\t80\t1\nperf_event\t0\t80\t1\n";
const char* cgroups_v1 =
    "#subsys_name\thierarchy\tnum_cgroups\tenabled\ncpu\t1\t1\t1\nperf_event\t7\t1\t1\n";
const char* cgroups_disabled =
    "#subsys_name\thierarchy\tnum_cgroups\tenabled\nperf_event\t0\t1\t0\n";
const char* cgroups_without = "#subsys_name\thierarchy\tnum_cgroups\tenabled\ncpu\t0\t1\t1\n";
const char* mi_pure_v2 =
    "22 1 0:21 / /sys rw,nosuid - sysfs sysfs rw\n"
    "30 22 0:26 / /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 rw,nsdelegate\n";
// This machine (Linux 6.18, hybrid): tmpfs at /sys/fs/cgroup, v1 controllers, cgroup2 in unified/.
const char* mi_hybrid =
    "30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "39 30 0:36 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
    "40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
const char* mi_v1_perf =
    "30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime shared:3 - cgroup cgroup rw,cpu\n"
    "41 30 0:38 / /sys/fs/cgroup/perf\\040event rw,relatime - cgroup cgroup rw,perf_event\n";
const char* mi_none = "22 1 0:21 / /sys rw,nosuid - sysfs sysfs rw\n";
}  // namespace

TEST_CASE("perf_event hierarchy detection from cgroups and mountinfo", "[cgroup]") {
  struct Row {
    const char* name;
    const char* cgroups;
    const char* mountinfo;
    Kind kind;
    std::string mount;
    std::string message_has;
  };
  const auto row = GENERATE(
      Row{"pure v2", cgroups_v2, mi_pure_v2, Kind::v2, "/sys/fs/cgroup", ""},
      Row{"hybrid, perf_event on v2", cgroups_v2, mi_hybrid, Kind::v2, "/sys/fs/cgroup/unified",
          ""},
      Row{"v1 with perf_event mounted", cgroups_v1, mi_v1_perf, Kind::v1,
          "/sys/fs/cgroup/perf event", ""},
      Row{"v2 bound, no cgroup fs", cgroups_v2, mi_none, Kind::none, "", "no cgroup2 filesystem"},
      Row{"v1 bound, not mounted", cgroups_v1, mi_hybrid, Kind::none, "", "hierarchy 7"},
      Row{"controller disabled", cgroups_disabled, mi_pure_v2, Kind::none, "", "enabled=0"},
      Row{"no controller", cgroups_without, mi_pure_v2, Kind::none, "", "CONFIG_CGROUP_PERF"});
  INFO(row.name);
  const auto h = detect_perf_event_hierarchy(row.cgroups, row.mountinfo);
  CHECK(h.kind == row.kind);
  CHECK(h.mount_point == row.mount);
  if (row.message_has.empty())
    CHECK(h.message.empty());
  else
    CHECK(h.message.find(row.message_has) != std::string::npos);
}

TEST_CASE("perf_event hierarchy reader reports an unreadable procfs", "[cgroup]") {
  const auto h = read_perf_event_hierarchy("/nonexistent-procfs");
  CHECK(h.kind == Kind::none);
  CHECK(h.message.find("/nonexistent-procfs/cgroups") != std::string::npos);
  CHECK(h.message.find("--path.procfs") != std::string::npos);
}

TEST_CASE("container identity from cgroup paths", "[cgroup]") {
  const std::string id = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
  const std::string uid = "5d3e4f2a-1b2c-4d5e-8f90-123456789abc";
  std::string uid_ = uid;
  for (auto& c : uid_)
    if (c == '-') c = '_';
  struct Row {
    std::string path, container_id, pod_uid;
  };
  const auto row = GENERATE_COPY(
      Row{"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uid_ +
              ".slice/cri-containerd-" + id + ".scope",
          "containerd://" + id, uid},
      Row{"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + uid_ +
              ".slice/crio-" + id + ".scope",
          "cri-o://" + id, uid},
      Row{"/kubepods.slice/kubepods-pod" + uid_ + ".slice/docker-" + id + ".scope",
          "docker://" + id, uid},
      Row{"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uid_ +
              ".slice/crio-conmon-" + id + ".scope",
          "", uid},
      Row{"/kubepods/burstable/pod" + uid + "/" + id, id, uid},
      Row{"/kubepods/pod" + uid + "/" + id, id, uid},
      // CRI-O's cgroupfs manager: crio-<id> without a scope, its conmon beside it
      // (internal/config/cgmgr/cgroupfs_linux.go ContainerCgroupPath, MoveConmonToCgroup).
      Row{"/kubepods/burstable/pod" + uid + "/crio-" + id, "cri-o://" + id, uid},
      Row{"/kubepods/pod" + uid + "/crio-" + id, "cri-o://" + id, uid},
      Row{"/kubepods/burstable/pod" + uid + "/crio-conmon-" + id, "", uid},
      Row{"/system.slice/docker-" + id + ".scope", "docker://" + id, ""},
      Row{"/docker/" + id, "docker://" + id, ""},
      Row{"/machine.slice/libpod-" + id + ".scope", "podman://" + id, ""},
      Row{"/machine.slice/libpod-conmon-" + id + ".scope", "", ""},
      Row{"/libpod_parent/libpod-" + id, "podman://" + id, ""},
      Row{"/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" + id + ".scope",
          "podman://" + id, ""},
      Row{"/machine.slice/libpod-" + id + ".scope/container", "podman://" + id, ""},
      Row{"/system.slice/ssh.service", "", ""}, Row{"/", "", ""});
  INFO(row.path);
  const auto got = identify_cgroup(row.path);
  CHECK(got.container_id == row.container_id);
  CHECK(got.pod_uid == row.pod_uid);
  CHECK(got.cgroup == row.path.substr(1));
}

TEST_CASE("discovery takes leaf container scopes and services, under a cap", "[cgroup]") {
  namespace fs = std::filesystem;
  const fs::path root =
      fs::temp_directory_path() / ("hwperf-cgroup-fixture-" + std::to_string(::getpid()));
  fs::remove_all(root);
  const std::string a(64, 'a'), b(64, 'b');
  const std::vector<std::string> dirs = {
      "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1_2.slice/cri-containerd-" +
          a + ".scope",
      "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1_2.slice/crio-conmon-" + a +
          ".scope",
      "system.slice/docker-" + b + ".scope",
      "system.slice/ssh.service",
      "system.slice/parent.service/child",  // parent.service is not a leaf; child is not eligible
      "user.slice/user-1000.slice"};
  for (const auto& d : dirs) fs::create_directories(root / d);
  const auto all = scan_leaf_cgroups(root, 100);
  std::vector<std::string> got;
  for (const auto& t : all.targets) got.push_back(t.cgroup);
  const std::vector<std::string> want = {dirs[0], dirs[2], dirs[3]};
  CHECK(got == want);
  CHECK(all.left_out_over_cap == 0);
  const auto capped = scan_leaf_cgroups(root, 1);
  REQUIRE(capped.targets.size() == 1);
  CHECK(capped.targets[0].cgroup == dirs[0]);
  CHECK(capped.left_out_over_cap == 2);
  fs::remove_all(root);
}

TEST_CASE("the hierarchy under --path.sysfs is preferred, and the others are listed", "[cgroup]") {
  // A container that sees its own cgroup2 at /sys/fs/cgroup and the host's under /host/sys.
  const char* two_mounts =
      "30 22 0:26 / /sys/fs/cgroup ro,nosuid - cgroup2 cgroup2 rw\n"
      "50 40 0:26 / /host/sys/fs/cgroup ro,nosuid - cgroup2 cgroup2 rw\n";
  CHECK(detect_perf_event_hierarchy(cgroups_v2, two_mounts).mount_point == "/sys/fs/cgroup");
  const auto host = detect_perf_event_hierarchy(cgroups_v2, two_mounts, "/host/sys");
  CHECK(host.mount_point == "/host/sys/fs/cgroup");
  CHECK(host.other_mount_points == std::vector<std::string>{"/sys/fs/cgroup"});
  // Hybrid: the v1 controllers are where a process can be placed without perf_event seeing it.
  const auto hybrid = detect_perf_event_hierarchy(cgroups_v2, mi_hybrid);
  CHECK(hybrid.other_mount_points ==
        std::vector<std::string>{"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/systemd"});
  const auto v1 = detect_perf_event_hierarchy(cgroups_v1, mi_v1_perf);
  CHECK(v1.other_mount_points == std::vector<std::string>{"/sys/fs/cgroup/cpu"});

  CHECK(reachable_mount_point("/sys/fs/cgroup/unified", "/sys") == "/sys/fs/cgroup/unified");
  CHECK(reachable_mount_point("/sys/fs/cgroup", "/tmp/fixture/sys") ==
        "/tmp/fixture/sys/fs/cgroup");
  CHECK(reachable_mount_point("/host/sys/fs/cgroup", "/host/sys") == "/host/sys/fs/cgroup");
}

TEST_CASE("configured roots and patterns add their leaves; a root is a leaf or has leaves",
          "[cgroup]") {
  namespace fs = std::filesystem;
  const fs::path root =
      fs::temp_directory_path() / ("hwperf-cgroup-rules-" + std::to_string(::getpid()));
  fs::remove_all(root);
  for (const char* dir :
       {"batch.slice/job-1/step-a", "batch.slice/job-1/step-b", "batch.slice/job-2", "lonely",
        "other/thing-x", "other/thing-y", "system.slice/cron.service"}) {
    fs::create_directories(root / dir);
  }
  DiscoveryRules rules;
  rules.roots = {"batch.slice", "lonely", "absent"};
  rules.match.emplace_back("thing-x$");
  const auto scan = scan_cgroups(root, rules, 100);
  std::vector<std::string> got;
  for (const auto& target : scan.targets) got.push_back(target.cgroup);
  CHECK(got == std::vector<std::string>{"batch.slice/job-1/step-a", "batch.slice/job-1/step-b",
                                        "batch.slice/job-2", "lonely", "other/thing-x",
                                        "system.slice/cron.service"});
  CHECK(scan.roots ==
        std::vector<RootState>{RootState::counting, RootState::counting, RootState::missing});
  fs::remove_all(root);
}

TEST_CASE("collectors.cgroup keys: read, dumped again, and mistakes named with their line",
          "[cgroup][config]") {
  using namespace hwperf;
  const Config config = parse_config_text(R"(
collectors:
  cgroup:
    enabled: true
    events: [perf::CPU-CLOCK]
    granularity: machine
    roots: [/batch.slice/, kubepods.slice]
    match: ['^system\.slice/.*\.scope$']
    max_cgroups: 1000
    rescan_interval_seconds: 1.5
)",
                                          "c.yml");
  const auto& cgroup = config.get<CgroupCollectorConfig>();
  CHECK(cgroup.enabled);
  CHECK(cgroup.granularity == Granularity::machine);
  REQUIRE(cgroup.roots.size() == 2);
  CHECK(cgroup.roots[0].path == "batch.slice");
  CHECK(cgroup.roots[0].mark.line == 7);
  CHECK(cgroup.roots[1].path == "kubepods.slice");
  REQUIRE(cgroup.match.size() == 1);
  CHECK(cgroup.max_cgroups == 1000);
  CHECK(cgroup.rescan_interval_seconds == 1.5);
  const Config again = parse_config_text(dump_config(config), "dump.yml");
  CHECK(dump_config(again) == dump_config(config));

  const auto error_of = [](const std::string& yaml) { return test::config_error(yaml, "bad.yml"); };
  CHECK_THAT(error_of("collectors:\n  cgroup:\n    roots: [a/../../etc]\n"),
             Catch::Contains("bad.yml:3:") && Catch::Contains("leaves the hierarchy"));
  CHECK_THAT(error_of("collectors:\n  cgroup:\n    match: ['(']\n"),
             Catch::Contains("bad.yml:3:") && Catch::Contains("is not a regular expression"));
  CHECK_THAT(error_of("collectors:\n  cgroup:\n    granularity: cpu\n"),
             Catch::Contains("expected package or machine"));
  CHECK_THAT(error_of("collectors:\n  cgroup:\n    max_cgroups: 0\n"),
             Catch::Contains("from 1 to 65536"));
  CHECK_THAT(error_of("collectors:\n  cgroup:\n    paths: [x]\n"),
             Catch::Contains("bad.yml:3:") && Catch::Contains("paths"));
}

TEST_CASE("a node where containers cannot be counted says so and the exporter keeps serving",
          "[cgroup]") {
  hwperf::test::TempDir procfs;
  // A kernel without CONFIG_CGROUP_PERF: no perf_event line.
  procfs.write("cgroups", cgroups_without);
  procfs.write("self/mountinfo", mi_pure_v2);
  hwperf::Config config;
  config.get<hwperf::CgroupCollectorConfig>().enabled = true;
  config.paths.procfs = procfs.path().string();
  hwperf::test::CapturedStderr log;
  const auto collector = make_cgroup_collector(config, hwperf::test::two_socket_topology(),
                                               hwperf::papi::preset_catalog());
  CHECK_THAT(collector->unavailable(), Catch::Contains("CONFIG_CGROUP_PERF"));
  const auto samples = hwperf::test::scrape(*collector);
  const auto available = hwperf::test::find_samples(samples, "hwperf_container_available");
  REQUIRE(available.size() == 1);
  CHECK(available[0].value == 0);
  CHECK_THAT(available[0].labels.at("reason"), Catch::Contains("no perf_event cgroup controller"));
  CHECK(hwperf::test::find_samples(samples, "hwperf_container_cgroups").empty());
  CHECK_THAT(log.text(), Catch::Contains("CONFIG_CGROUP_PERF") &&
                             Catch::Contains("the other collectors keep serving"));
}

namespace {

// The container collector over a fake counting backend and a cgroup tree in a temporary folder:
// every leaf under the configured root `pods` counted, two events alone and a group of two.
hwperf::cgroup::CgroupCollectorSettings fake_container_settings(
    const std::filesystem::path& root, const hwperf::perf::CountingBackend& backend) {
  hwperf::cgroup::CgroupCollectorSettings settings;
  settings.hierarchy.kind = PerfEventHierarchy::Kind::v2;
  settings.hierarchy.mount_point = "/sys/fs/cgroup";
  settings.root = root;
  settings.events = {
      hwperf::test::counted_event("container", "perf::TASK-CLOCK", "task_clock_seconds", 1,
                                  hwperf::events::Unit::nanoseconds),
      hwperf::test::counted_event("container", "perf::PAGE-FAULTS", "page_faults", 2)};
  hwperf::perf::CountedGroup group;
  group.name = "pair";
  group.members = {
      hwperf::test::counted_event("container", "perf::CYCLES", "cycles", 3),
      hwperf::test::counted_event("container", "perf::INSTRUCTIONS", "instructions", 4)};
  settings.groups = {group};
  settings.cpus = hwperf::test::two_socket_topology().threads();
  settings.configured.roots = {{"pods", {}}};
  settings.configured.rescan_interval_seconds = 60;  // rescans are the test's
  settings.backend = &backend;
  return settings;
}

// Pods `pods/<name>` in a temporary cgroup tree, and the fake board their counters read.
struct FakePods {
  explicit FakePods(std::initializer_list<const char*> names) {
    for (const char* name : names) tree.write(std::string("pods/") + name + "/.keep", "");
  }
  hwperf::test::TempDir tree;
  hwperf::test::FakeCounterBoard board;
  const hwperf::test::FakeCountingBackend backend{board};
};

}  // namespace

// Issue 39: the cgroups' series are stable between rescans, so a scrape writes them from text
// prepared when the set of cgroups changes: the same bytes as collect()'s families.
TEST_CASE("the container collector writes its cgroups' series from text prepared at a rescan",
          "[cgroup][exposition]") {
  FakePods pods({"a", "b"});
  pods.board.derived = true;
  const hwperf::test::TempDir& tree = pods.tree;
  CgroupCollector collector(fake_container_settings(tree.path(), pods.backend));
  REQUIRE(hwperf::capabilities_of(collector).text != nullptr);
  const auto agree = [&] {
    for (const auto format :
         {hwperf::ExpositionFormat::text_0_0_4, hwperf::ExpositionFormat::openmetrics_1_0_0}) {
      std::vector<prometheus::MetricFamily> families;
      collector.collect(families);
      std::string expected = "before\n";
      hwperf::append_families(expected, families, format);
      std::string text = "before\n";
      hwperf::collect_text(collector, text, format);
      CHECK(text == expected);
    }
  };
  agree();
  std::string once;
  hwperf::collect_text(collector, once, hwperf::ExpositionFormat::text_0_0_4);
  CHECK_THAT(once, Catch::Contains("hwperf_container_cycles_total{container_id=\"\",pod_uid=\"\","
                                   "cgroup=\"pods/b\",group=\"pair\",package=\"1\"}"));
  // A cgroup gone, another come: the text is prepared again for the cgroups counted now.
  std::filesystem::remove_all(tree.path() / "pods" / "a");
  tree.write("pods/c/.keep", "");
  collector.rescan();
  agree();
  std::string again;
  hwperf::collect_text(collector, again, hwperf::ExpositionFormat::text_0_0_4);
  CHECK(again.find("cgroup=\"pods/a\"") == std::string::npos);
  CHECK_THAT(again, Catch::Contains("cgroup=\"pods/c\""));
}

namespace {

// The fake backend's units, and what an engine reports it gave to no cgroup (bpf mode).
class FakeEngineBackend final : public hwperf::perf::CountingBackend {
 public:
  FakeEngineBackend(const hwperf::perf::CountingBackend& units, Unattributed lost)
      : units_(units), lost_(std::move(lost)) {}
  hwperf::OrErrno<std::unique_ptr<hwperf::perf::OpenUnit>> open(
      const std::vector<hwperf::perf::EventEncoding>& events,
      const hwperf::perf::CountingTarget& target, int cpu) const override {
    return units_.open(events, target, cpu);
  }
  std::optional<Unattributed> unattributed() const override { return lost_; }

 private:
  const hwperf::perf::CountingBackend& units_;
  Unattributed lost_;
};

}  // namespace

// Issue 38: what the BPF engine counts across a cgroup switch its program did not run at goes to
// no cgroup; the collector exports it per counts family, and the switches missed, so that a
// cgroup's count plus it brackets the cgroup's cpu.stat. A perf backend reports none: no family.
TEST_CASE("the container collector exports what the backend gave to no cgroup per family",
          "[cgroup][bpf_unit]") {
  FakePods pods({"a"});
  const hwperf::test::TempDir& tree = pods.tree;
  const hwperf::test::FakeCountingBackend& units = pods.backend;
  const auto slots = hwperf::test::two_socket_topology().threads().size();
  hwperf::perf::CountingBackend::Unattributed lost;
  lost.counts.assign(4 * slots, 0);          // task clock, page faults, cycles, instructions
  lost.counts[0 * slots + 0] = 400'000'000;  // ns of task clock on the first CPU (package 0)
  lost.counts[0 * slots + slots - 1] = 100'000'000;  // and on the last (package 1)
  lost.counts[3 * slots + 0] = 7;                    // instructions, in the group "pair"
  lost.missed_switches = 3;
  const FakeEngineBackend engine(units, lost);

  SECTION("an engine's unattributed counts and missed switches") {
    CgroupCollector collector(fake_container_settings(tree.path(), engine));
    const auto samples = hwperf::test::scrape(collector);
    const auto clock = hwperf::test::find_samples(
        samples, "hwperf_container_unattributed_task_clock_seconds_total");
    REQUIRE(clock.size() == 2);
    for (const auto& sample : clock) {
      CHECK(sample.labels.count("cgroup") == 0);
      CHECK(sample.value == Approx(sample.labels.at("package") == "0" ? 0.4 : 0.1));
    }
    const auto instructions =
        hwperf::test::find_samples(samples, "hwperf_container_unattributed_instructions_total");
    REQUIRE(instructions.size() == 2);
    double total = 0;
    for (const auto& sample : instructions) {
      CHECK(sample.labels.at("group") == "pair");
      total += sample.value;
    }
    CHECK(total == 7);
    CHECK(hwperf::test::find_samples(samples, "hwperf_container_unattributed_page_faults_total")
              .size() == 2);
    const auto missed =
        hwperf::test::find_samples(samples, "hwperf_container_missed_switches_total");
    REQUIRE(missed.size() == 1);
    CHECK(missed[0].value == 3);
    // The text path writes the same bytes.
    std::vector<prometheus::MetricFamily> families;
    collector.collect(families);
    std::string expected;
    hwperf::append_families(expected, families, hwperf::ExpositionFormat::text_0_0_4);
    std::string text;
    hwperf::collect_text(collector, text, hwperf::ExpositionFormat::text_0_0_4);
    CHECK(text == expected);
  }
  SECTION("none from a backend that gives every count to a target") {
    CgroupCollector collector(fake_container_settings(tree.path(), units));
    const auto samples = hwperf::test::scrape(collector);
    CHECK(hwperf::test::find_samples(samples, "hwperf_container_missed_switches_total").empty());
    CHECK(hwperf::test::find_samples(samples,
                                     "hwperf_container_unattributed_task_clock_seconds_total")
              .empty());
  }
}
