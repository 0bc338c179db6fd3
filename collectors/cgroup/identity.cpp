#include "collectors/cgroup/identity.h"

#include <algorithm>
#include <vector>

namespace hwperf::cgroup {
namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

bool is_hex_id(std::string_view s) {
  return s.size() >= 12 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::vector<std::string_view> components(std::string_view path) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (start <= path.size()) {
    const auto end = std::min(path.find('/', start), path.size());
    if (end > start) out.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// "<prefix><id>.scope" (a systemd scope), or "<prefix><id>" where `unscoped` (CRI-O's cgroupfs
// manager names a container's cgroup crio-<id>) -> id when id looks like a container id.
std::string_view prefixed_id(std::string_view leaf, std::string_view prefix, bool unscoped) {
  if (!starts_with(leaf, prefix)) return {};
  auto id = leaf.substr(prefix.size());
  if (ends_with(id, ".scope")) {
    id.remove_suffix(6);
  } else if (!unscoped) {
    return {};
  }
  return is_hex_id(id) ? id : std::string_view{};
}

// CRI-O's and Podman's conmon, beside each container (a scope with the systemd driver,
// crio-conmon-<id> with CRI-O's cgroupfs manager: cri-o internal/config/cgmgr/cgroupfs_linux.go).
bool is_monitor(std::string_view leaf) {
  return starts_with(leaf, "crio-conmon-") || starts_with(leaf, "libpod-conmon-");
}

// kube-state-metrics' scheme for a runtime's ids ("" for none): the configuration's spellings
// are those schemes (config.h).
std::string scheme_of(ContainerRuntime runtime) {
  return runtime == ContainerRuntime::none ? "" : std::string(to_string(runtime)) + "://";
}

std::string pod_uid_of(std::string_view c) {
  std::string_view uid;
  // systemd driver: kubepods-pod<uid>.slice or kubepods-<qos>-pod<uid>.slice, '-' written as '_'.
  if (starts_with(c, "kubepods-") && ends_with(c, ".slice")) {
    const auto at = c.find("-pod");
    if (at != std::string_view::npos) uid = c.substr(at + 4, c.size() - (at + 4) - 6);
  } else if (starts_with(c, "pod") && c.size() > 3) {  // cgroupfs driver: pod<uid>
    uid = c.substr(3);
  }
  std::string out(uid);
  std::replace(out.begin(), out.end(), '_', '-');
  return out;
}

}  // namespace

CgroupIdentity identify_cgroup(std::string_view cgroup_path, ContainerRuntime cgroupfs_runtime) {
  CgroupIdentity id;
  while (!cgroup_path.empty() && cgroup_path.front() == '/') cgroup_path.remove_prefix(1);
  id.cgroup = std::string(cgroup_path);
  const auto parts = components(cgroup_path);
  if (parts.empty()) return id;
  const bool kube = std::any_of(parts.begin(), parts.end(),
                                [](std::string_view c) { return starts_with(c, "kubepods"); });
  if (kube)
    for (const auto c : parts)
      if (auto uid = pod_uid_of(c); !uid.empty()) id.pod_uid = std::move(uid);

  auto leaf = parts.back();
  // crun (Podman's default runtime) on cgroup v2 with the systemd driver moves the container's
  // processes one level down, into <scope>/container, so that the scope can delegate.
  if (leaf == "container" && parts.size() >= 2) leaf = parts[parts.size() - 2];
  id.monitor = is_monitor(leaf);
  if (id.monitor) return id;
  struct Scheme {
    std::string_view prefix;
    std::string scheme;
    bool unscoped;
  };
  static const Scheme scopes[] = {
      {"cri-containerd-", scheme_of(ContainerRuntime::containerd), false},
      {"crio-", scheme_of(ContainerRuntime::crio), true},
      {"docker-", scheme_of(ContainerRuntime::docker), false},
      {"libpod-", "podman://", false}};
  for (const auto& s : scopes)
    if (const auto cid = prefixed_id(leaf, s.prefix, s.unscoped); !cid.empty()) {
      id.container_id = s.scheme + std::string(cid);
      return id;
    }
  if (parts.size() >= 2 && is_hex_id(leaf)) {
    const auto parent = parts[parts.size() - 2];
    if (parent == "docker")
      id.container_id = scheme_of(ContainerRuntime::docker) + std::string(leaf);
    else if (kube && !id.pod_uid.empty())  // the kubelet's cgroupfs driver: runtime configured
      id.container_id = scheme_of(cgroupfs_runtime) + std::string(leaf);
  }
  if (parts.size() >= 2 && starts_with(leaf, "libpod-") &&
      parts[parts.size() - 2] == "libpod_parent" && is_hex_id(leaf.substr(7)))
    id.container_id = "podman://" + std::string(leaf.substr(7));
  return id;
}

}  // namespace hwperf::cgroup
