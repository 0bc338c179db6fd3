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

// "<prefix><id>.scope" -> id when id looks like a container id.
std::string_view scope_id(std::string_view leaf, std::string_view prefix) {
  if (!starts_with(leaf, prefix) || !ends_with(leaf, ".scope")) return {};
  const auto id = leaf.substr(prefix.size(), leaf.size() - prefix.size() - 6);
  return is_hex_id(id) ? id : std::string_view{};
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

CgroupIdentity identify_cgroup(std::string_view cgroup_path) {
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
  struct Scheme {
    std::string_view prefix, scheme;
  };
  // The conmon scopes of CRI-O and Podman are monitors, not containers: they match nothing here.
  static constexpr Scheme scopes[] = {{"cri-containerd-", "containerd://"},
                                      {"crio-", "cri-o://"},
                                      {"docker-", "docker://"},
                                      {"libpod-", "podman://"}};
  for (const auto& s : scopes)
    if (const auto cid = scope_id(leaf, s.prefix); !cid.empty()) {
      id.container_id = std::string(s.scheme) + std::string(cid);
      return id;
    }
  if (parts.size() >= 2 && is_hex_id(leaf)) {
    const auto parent = parts[parts.size() - 2];
    if (parent == "docker")
      id.container_id = "docker://" + std::string(leaf);
    else if (kube && !id.pod_uid.empty())
      id.container_id = std::string(leaf);  // runtime unknown
  }
  if (parts.size() >= 2 && starts_with(leaf, "libpod-") &&
      parts[parts.size() - 2] == "libpod_parent" && is_hex_id(leaf.substr(7)))
    id.container_id = "podman://" + std::string(leaf.substr(7));
  return id;
}

}  // namespace hwperf::cgroup
