// Container identity from a cgroup path alone (no runtime or Kubernetes API calls), written so
// that PromQL can join it with kube-state-metrics' kube_pod_container_info{container_id,uid}.
#pragma once

#include <string>
#include <string_view>

#include "collectors/cgroup/cgroup_config.h"

namespace hwperf::cgroup {

struct CgroupIdentity {
  // kube-state-metrics spelling: containerd://<id>, cri-o://<id>, docker://<id>; Podman (which
  // kube-state-metrics never sees) is written podman://<id>. Empty for a systemd service, a
  // runtime's monitor or any other cgroup. With the kubelet's cgroupfs driver the path does not
  // name the runtime: the id takes the scheme of the runtime the configuration names, else it is
  // given bare.
  std::string container_id;
  // Pod UID with dashes (the systemd driver writes them as underscores). Empty outside Kubernetes.
  std::string pod_uid;
  // The cgroup path relative to the hierarchy root, always set ("/" stripped at the front).
  std::string cgroup;
  // A container runtime's monitor (CRI-O's and Podman's conmon, crio-conmon-*, libpod-conmon-*):
  // no container, and never counted, whatever root or pattern takes its path.
  bool monitor = false;
};

// `cgroupfs_runtime` is the runtime behind the kubelet's cgroupfs driver's bare ids
// (collectors.cgroup.runtime).
CgroupIdentity identify_cgroup(std::string_view cgroup_path,
                               ContainerRuntime cgroupfs_runtime = ContainerRuntime::none);

}  // namespace hwperf::cgroup
