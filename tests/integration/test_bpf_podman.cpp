// Issue 38's podman acceptance: a busy podman container's CPU time in bpf mode is its cpu.stat
// usage_usec over the same window within 2 %, and perf mode's figure within 2 %, what the engine
// gave to no cgroup over the window allowed below (as the other [bpf] live tests allow for it).
// Podman runs as scripts/container-test.sh runs it here (vfs storage, runc, cgroupfs, the
// container's cgroup libpod_parent/libpod-<id>), in a temporary storage of its own and with no
// image: a root filesystem of mount points and the host's /usr mounted read-only, a shell loop
// spinning. Hidden ([.]): tests/CMakeLists.txt runs "[podman]" where configure found podman.
// Root runs it; the container is removed however the test ends.
#include "tests/catch.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "collectors/cgroup/cgroup_collector.h"
#include "collectors/papi/papi_presets.h"
#include "tests/support/bpf_live_support.h"
#include "tests/support/support.h"
#include "topology/topology.h"

using namespace hwperf;
using namespace hwperf::test::bpf_live;

namespace {

// A command's standard output, its trailing newline cut; "" when it failed.
std::string output_of(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  char buffer[256];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) out += buffer;
  if (::pclose(pipe) != 0) return "";
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

// A busy container under its own podman storage in a temporary folder, removed at the end.
class BusyContainer {
 public:
  BusyContainer() : name_("hwperf-test-bpf-busy-" + std::to_string(::getpid())) {
    for (const char* dir : {"usr", "proc", "sys", "dev", "tmp", "etc"}) {
      std::filesystem::create_directories(dir_.path() / "rootfs" / dir);
    }
    for (const char* link : {"lib", "lib64", "bin", "sbin"}) {
      std::filesystem::create_directory_symlink(std::string("usr/") + link,
                                                dir_.path() / "rootfs" / link);
    }
    // podman's default open-file limit exceeds what a host without CAP_SYS_RESOURCE lets root
    // set (container-test.sh sets the same limits).
    id_ = output_of(podman() + " run -d --name " + name_ +
                    " --network none --ulimit nofile=4096:4096 --ulimit nproc=4096:4096"
                    " -v /usr:/usr:ro --rootfs " +
                    (dir_.path() / "rootfs").string() +
                    " /usr/bin/sh -c 'while :; do :; done' 2>/dev/null");
  }
  ~BusyContainer() {
    const std::string rm = podman() + " rm -f -t 0 " + name_ + " >/dev/null 2>&1";
    if (std::system(rm.c_str()) != 0) WARN("could not remove the container " << name_);
  }
  BusyContainer(const BusyContainer&) = delete;
  BusyContainer& operator=(const BusyContainer&) = delete;

  const std::string& id() const { return id_; }

 private:
  std::string podman() const {
    const std::string at = dir_.path().string();
    return "podman --root " + at + "/storage --runroot " + at +
           "/run --storage-driver vfs --runtime runc --cgroup-manager cgroupfs --events-backend "
           "file";
  }

  test::TempDir dir_;
  std::string name_;
  std::string id_;
};

Config podman_config(CountingMode mode) {
  return clock_config("libpod_parent", mode);  // podman's cgroupfs parent
}

double seconds_of(const std::vector<test::Sample>& samples, const std::string& family,
                  const std::map<std::string, std::string>& labels = {}) {
  double sum = 0;
  for (const auto& sample : test::find_samples(samples, family, labels)) sum += sample.value;
  return sum;
}

}  // namespace

TEST_CASE("BPF mode: a busy podman container's CPU time is its cpu.stat usage within 2 %",
          "[.][podman][bpf][cgroup]") {
  const auto h = v2_hierarchy();
  {
    INFO("podman must be installed (tests/CMakeLists.txt runs this test only where it is)");
    REQUIRE(std::system("command -v podman >/dev/null 2>&1") == 0);
  }
  const BusyContainer container;
  {
    INFO("podman run failed: try scripts/container-test.sh's podman command by hand");
    REQUIRE(container.id().size() == 64);
  }
  const auto cgroup = h.root / "libpod_parent" / ("libpod-" + container.id());
  REQUIRE(std::filesystem::exists(cgroup / "cpu.stat"));
  const Topology topology = Topology::load(TopologyConfig{});
  const auto bpf = cgroup::make_cgroup_collector(podman_config(CountingMode::bpf), topology,
                                                 papi::preset_catalog());
  const auto perf = cgroup::make_cgroup_collector(podman_config(CountingMode::perf), topology,
                                                  papi::preset_catalog());
  const std::map<std::string, std::string> ours = {{"container_id", "podman://" + container.id()}};
  const auto window = [&](double& in_bpf, double& in_perf, double& lost, double& usage) {
    const auto b = test::scrape(*bpf);
    const auto p = test::scrape(*perf);
    usage = usage_seconds(cgroup);
    in_bpf = seconds_of(b, "hwperf_container_clock_seconds_total", ours);
    in_perf = seconds_of(p, "hwperf_container_clock_seconds_total", ours);
    lost = seconds_of(b, "hwperf_container_unattributed_clock_seconds_total");
  };
  double bpf0 = 0, perf0 = 0, lost0 = 0, usage0 = 0;
  window(bpf0, perf0, lost0, usage0);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  double bpf1 = 0, perf1 = 0, lost1 = 0, usage1 = 0;
  window(bpf1, perf1, lost1, usage1);
  const double in_bpf = bpf1 - bpf0, in_perf = perf1 - perf0, lost = lost1 - lost0;
  const double usage = usage1 - usage0;
  INFO("podman://" << container.id().substr(0, 12) << " over 2 s: cpu.stat " << usage
                   << " s, bpf mode " << in_bpf << " s (" << lost
                   << " s given to no cgroup), perf mode " << in_perf << " s");
  CHECK(usage > 0.5);  // it was busy
  CHECK(in_bpf >= usage * 0.98 - lost);
  CHECK(in_bpf <= usage * 1.02);
  CHECK(in_bpf >= in_perf * 0.98 - lost);
  CHECK(in_bpf <= in_perf * 1.02);
}
