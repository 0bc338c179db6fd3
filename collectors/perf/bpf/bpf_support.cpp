#include "collectors/perf/bpf/bpf_support.h"

#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

#include "common/text.h"

namespace hwperf::perf::bpf {
namespace {

// Not in every libc's headers yet (Linux 5.8).
constexpr int kCapPerfmon = 38;
constexpr int kCapBpf = 39;

// This process's effective capability set, two 32-bit words (_LINUX_CAPABILITY_VERSION_3).
std::uint64_t effective_capabilities() {
  __user_cap_header_struct header{};
  header.version = _LINUX_CAPABILITY_VERSION_3;
  header.pid = 0;
  __user_cap_data_struct data[2]{};
  if (::syscall(SYS_capget, &header, data) != 0) return 0;
  return static_cast<std::uint64_t>(data[0].effective) |
         static_cast<std::uint64_t>(data[1].effective) << 32;
}

bool has_capability(std::uint64_t set, int capability) { return (set >> capability & 1u) != 0; }

}  // namespace

BpfFacts probe_bpf_facts(const std::string& sysfs, bool perf_event_on_cgroup_v2) {
  BpfFacts facts;
  facts.btf_path = sysfs + "/kernel/btf/vmlinux";
  struct stat info {};
  facts.btf_present = ::stat(facts.btf_path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
  const std::uint64_t caps = effective_capabilities();
  facts.cap_bpf = has_capability(caps, kCapBpf);
  facts.cap_perfmon = has_capability(caps, kCapPerfmon);
  facts.cap_sys_admin = has_capability(caps, CAP_SYS_ADMIN);
  facts.perf_event_on_cgroup_v2 = perf_event_on_cgroup_v2;
  return facts;
}

std::vector<std::string> missing_for_bpf(const BpfFacts& facts) {
  std::vector<std::string> missing;
  if (!facts.cap_sys_admin && !(facts.cap_bpf && facts.cap_perfmon)) {
    std::string lacking = !facts.cap_bpf && !facts.cap_perfmon ? "CAP_BPF and CAP_PERFMON"
                          : !facts.cap_bpf                     ? "CAP_BPF"
                                                               : "CAP_PERFMON";
    missing.push_back(
        "the capabilities to load BPF programs and count every CPU: " + lacking +
        " are not in the effective set (CAP_BPF with CAP_PERFMON, or CAP_SYS_ADMIN, is "
        "needed; run as root, `setcap cap_bpf,cap_perfmon+ep` the binary, or add both to the "
        "container's securityContext.capabilities)");
  }
  if (!facts.btf_present) {
    missing.push_back("the kernel's BTF type information: " + facts.btf_path +
                      " does not exist (a kernel built with CONFIG_DEBUG_INFO_BTF=y, as Debian's "
                      "and most distributions' since Linux 5.x; in a container, mount the "
                      "host's /sys)");
  }
  if (!facts.perf_event_on_cgroup_v2) {
    missing.push_back(
        "the perf_event cgroup controller on cgroup v2: the program keys counts by cgroup v2 "
        "ids, and the switches it counts at are those of the perf_event controller's hierarchy, "
        "bound to cgroup v1 here or absent (boot with systemd.unified_cgroup_hierarchy=1, or "
        "leave perf_event out of the v1 mounts)");
  }
  return missing;
}

std::string bpf_unavailable_message(const std::vector<std::string>& missing) {
  return "BPF counting cannot start here: " + join(missing, "; ");
}

}  // namespace hwperf::perf::bpf
