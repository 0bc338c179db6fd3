// collectors/cgroup identity beyond the path's own words: the runtime the administrator names for
// the kubelet cgroupfs driver's bare ids (collectors.cgroup.runtime), spelled as kube-state-metrics
// spells container_id, and the runtimes' monitors, which no root or pattern makes a container.
#include "tests/catch.hpp"

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "collectors/cgroup/discovery.h"
#include "collectors/cgroup/identity.h"
#include "collectors/configuration.h"
#include "tests/support/support.h"

using namespace hwperf;
using namespace hwperf::cgroup;

namespace {
const std::string kId = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const std::string kUid = "5d3e4f2a-1b2c-4d5e-8f90-123456789abc";
}  // namespace

TEST_CASE("a bare cgroupfs container id takes the scheme of the runtime the configuration names",
          "[cgroup]") {
  // kube-state-metrics' container_id is status.containerStatuses[].containerID, "<runtime>://<id>"
  // (internal/store/pod.go): containerd://, cri-o://, docker:// as the CRI runtime reports itself.
  struct Row {
    ContainerRuntime runtime;
    std::string container_id;
  };
  const auto row = GENERATE(Row{ContainerRuntime::none, kId},
                            Row{ContainerRuntime::containerd, "containerd://" + kId},
                            Row{ContainerRuntime::crio, "cri-o://" + kId},
                            Row{ContainerRuntime::docker, "docker://" + kId});
  CAPTURE(to_string(row.runtime));
  CHECK(identify_cgroup("/kubepods/burstable/pod" + kUid + "/" + kId, row.runtime).container_id ==
        row.container_id);
  CHECK(identify_cgroup("kubepods/pod" + kUid + "/" + kId, row.runtime).container_id ==
        row.container_id);
  // A path that names its runtime keeps it, and a bare id outside a pod stays nobody's.
  CHECK(identify_cgroup("/kubepods/burstable/pod" + kUid + "/crio-" + kId, row.runtime)
            .container_id == "cri-o://" + kId);
  CHECK(identify_cgroup(
            "/kubepods.slice/kubepods-pod" + kUid + ".slice/cri-containerd-" + kId + ".scope",
            row.runtime)
            .container_id == "containerd://" + kId);
  CHECK(identify_cgroup("/batch/" + kId, row.runtime).container_id.empty());
}

TEST_CASE("runtime monitors are never counted, not under a root nor matching a pattern",
          "[cgroup]") {
  namespace fs = std::filesystem;
  const test::TempDir tree;
  const std::string pod = "kubepods/burstable/pod" + kUid;
  const std::vector<std::string> leaves = {
      pod + "/crio-" + kId,
      pod + "/crio-conmon-" + kId,
      "kubepods.slice/kubepods-pod1.slice/crio-conmon-" + kId + ".scope",
      "machine.slice/libpod-conmon-" + kId + ".scope",
      "machine.slice/libpod-" + kId + ".scope",
      "batch.slice/job-1"};
  for (const auto& leaf : leaves) fs::create_directories(tree.path() / leaf);
  DiscoveryRules rules;
  rules.roots = {"kubepods", "kubepods.slice", "machine.slice", "batch.slice"};
  rules.match.emplace_back("conmon");
  const auto scan = scan_cgroups(tree.path(), rules, 100);
  std::vector<std::string> got;
  for (const auto& target : scan.targets) got.push_back(target.cgroup);
  CHECK(got == std::vector<std::string>{"batch.slice/job-1", pod + "/crio-" + kId,
                                        "machine.slice/libpod-" + kId + ".scope"});
  for (const auto& leaf : {leaves[1], leaves[2], leaves[3]}) {
    CAPTURE(leaf);
    CHECK(identify_cgroup(leaf).monitor);
  }
  CHECK_FALSE(identify_cgroup(leaves[0]).monitor);
}

TEST_CASE("collectors.cgroup.runtime: read, dumped again, and a wrong spelling named with its line",
          "[cgroup][config]") {
  const Config config =
      parse_config_text("collectors:\n  cgroup:\n    enabled: true\n    runtime: cri-o\n", "c.yml");
  CHECK(config.get<CgroupCollectorConfig>().runtime == ContainerRuntime::crio);
  CHECK(parse_config_text(dump_config(config), "dump.yml").get<CgroupCollectorConfig>().runtime ==
        ContainerRuntime::crio);
  CHECK(Config{}.get<CgroupCollectorConfig>().runtime == ContainerRuntime::none);
  // The scheme is written for us: a runtime spelled as kube-state-metrics shows it is refused.
  CHECK_THAT(test::config_error("collectors:\n  cgroup:\n    runtime: containerd://\n", "bad.yml"),
             Catch::Contains("bad.yml:3:") && Catch::Contains("collectors.cgroup.runtime") &&
                 Catch::Contains("cri-o"));
}

TEST_CASE("collectors.cgroup.mode: auto by default, read, dumped again, a wrong spelling named",
          "[cgroup][config]") {
  CHECK(Config{}.get<CgroupCollectorConfig>().mode == CountingMode::automatic);
  for (const auto& [text, mode] :
       {std::pair{"auto", CountingMode::automatic}, std::pair{"perf", CountingMode::perf},
        std::pair{"bpf", CountingMode::bpf}}) {
    CAPTURE(text);
    const Config config = parse_config_text(
        std::string("collectors:\n  cgroup:\n    enabled: true\n    mode: ") + text + "\n",
        "c.yml");
    CHECK(config.get<CgroupCollectorConfig>().mode == mode);
    CHECK(parse_config_text(dump_config(config), "dump.yml").get<CgroupCollectorConfig>().mode ==
          mode);
  }
  CHECK_THAT(test::config_error("collectors:\n  cgroup:\n    mode: ebpf\n", "bad.yml"),
             Catch::Contains("bad.yml:3:") && Catch::Contains("collectors.cgroup.mode") &&
                 Catch::Contains("bpf"));
}
