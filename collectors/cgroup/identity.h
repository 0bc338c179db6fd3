// Container identity from a cgroup path alone (no runtime or Kubernetes API calls), written so
// that PromQL can join it with kube-state-metrics' kube_pod_container_info{container_id,uid}.
#pragma once

#include <string>
#include <string_view>

namespace hwperf::cgroup {

struct CgroupIdentity {
  // kube-state-metrics spelling: containerd://<id>, cri-o://<id>, docker://<id>; Podman (which
  // kube-state-metrics never sees) is written podman://<id>. Empty for a systemd service or any
  // other cgroup. With the kubelet's cgroupfs driver the path does not name the runtime, so the
  // id is given bare (no scheme).
  std::string container_id;
  // Pod UID with dashes (the systemd driver writes them as underscores). Empty outside Kubernetes.
  std::string pod_uid;
  // The cgroup path relative to the hierarchy root, always set ("/" stripped at the front).
  std::string cgroup;
};

CgroupIdentity identify_cgroup(std::string_view cgroup_path);

}  // namespace hwperf::cgroup
