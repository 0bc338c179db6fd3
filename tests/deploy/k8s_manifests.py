#!/usr/bin/env python3
"""Asserts the fields of deploy/kubernetes/ that make the exporter work and keep it contained.
Input: the objects kubectl printed as JSON (one after another); writes the ConfigMap's hwperf.yml
to the second argument for the exporter's --check-config. Every problem is listed, exit 1 if any."""
import json
import re
import sys

text = open(sys.argv[1]).read()
objects, position, decoder = [], 0, json.JSONDecoder()
while position < len(text):
    if text[position].isspace():
        position += 1
        continue
    obj, position = decoder.raw_decode(text, position)
    objects.extend(obj["items"] if obj.get("kind") == "List" else [obj])

problems = []


def check(condition, message):
    if not condition:
        problems.append(message)


def one(kind):
    found = [o for o in objects if o.get("kind") == kind]
    check(len(found) == 1, f"expected one {kind}, found {len(found)}")
    return found[0] if found else {}


def config_value(text, *keys):
    """The scalar at keys in the exporter's configuration, a block-style YAML mapping (no YAML
    module needed); None when absent."""
    lines = [l for l in text.splitlines() if l.strip() and not l.lstrip().startswith("#")]
    start, end, parent_indent = 0, len(lines), -1
    for depth, key in enumerate(keys):
        child_indent, found = None, None
        for i in range(start, end):
            indent = len(lines[i]) - len(lines[i].lstrip())
            if indent <= parent_indent:
                end = i
                break
            child_indent = indent if child_indent is None else child_indent
            match = re.match(rf"{re.escape(key)}:\s*(.*?)\s*(#.*)?$", lines[i].strip())
            if indent == child_indent and match:
                found = (i, indent, match.group(1))
        if found is None:
            return None
        start, parent_indent = found[0] + 1, found[1]
        if depth == len(keys) - 1:
            return found[2].strip("\"'")
    return None


namespace = one("Namespace").get("metadata", {}).get("name")
check(namespace, "the Namespace has no name")
for obj in objects:
    if obj.get("kind") != "Namespace":
        check(obj["metadata"].get("namespace") == namespace,
              f"{obj['kind']} {obj['metadata'].get('name')} is not in namespace {namespace}")

config = one("ConfigMap").get("data", {}).get("hwperf.yml", "")
paths = {name: config_value(config, "paths", name) for name in ("sysfs", "procfs", "devfs")}
check(paths == {"sysfs": "/host/sys", "procfs": "/host/proc", "devfs": "/host/dev"},
      f"the ConfigMap's paths do not point at the /host mounts: {paths}")
# Containers are counted: the cgroup collector is off by default.
check(config_value(config, "collectors", "cgroup", "enabled") == "true",
      "the ConfigMap does not enable collectors.cgroup (per-container counts)")
# Memory bandwidth, the effective clock and C-states (the dashboard's Memory row): the uncore
# collector, best effort, must not be turned off.
check(config_value(config, "collectors", "uncore", "enabled") in (None, "true"),
      "the ConfigMap turns collectors.uncore off (the dashboard's Memory row would stay empty)")
open(sys.argv[2], "w").write(config)

account = one("ServiceAccount")
daemonset = one("DaemonSet")
pod = daemonset.get("spec", {}).get("template", {}).get("spec", {})
containers = pod.get("containers", [])
check(len(containers) == 1, "the DaemonSet should run exactly one container")
container = containers[0] if containers else {}
check(pod.get("serviceAccountName") == account.get("metadata", {}).get("name"),
      "the pod does not use the ServiceAccount")
check(pod.get("automountServiceAccountToken") is False, "the pod mounts an API token it never uses")
check(not pod.get("hostPID") and not pod.get("hostNetwork"), "hostPID/hostNetwork are not needed")

# Every node, control plane included: one toleration without a key and operator Exists.
check(any(t.get("operator") == "Exists" and not t.get("key") and not t.get("effect")
          for t in pod.get("tolerations", [])), "no toleration of every taint (operator: Exists)")

# Privileges: privileged, or root with CAP_PERFMON.
security = container.get("securityContext", {})
caps = set(security.get("capabilities", {}).get("add", []))
check(security.get("privileged") is True or "PERFMON" in caps,
      "the container is neither privileged nor granted CAP_PERFMON")
check(security.get("readOnlyRootFilesystem") is True, "the root file system is writable")

# Host mounts: /sys, /proc, /dev/cpu, every one read-only, where the ConfigMap points.
volumes = {v["name"]: v for v in pod.get("volumes", [])}
host_paths = {}
for mount in container.get("volumeMounts", []):
    volume = volumes.get(mount["name"], {})
    if "hostPath" in volume:
        host_paths[volume["hostPath"]["path"]] = mount["mountPath"]
        check(mount.get("readOnly") is True, f"host path {volume['hostPath']['path']} is mounted writable")
    if "configMap" in volume:
        check(mount["mountPath"] == "/etc/hwperf", "the ConfigMap is not mounted at /etc/hwperf")
for host, inside in {"/sys": "/host/sys", "/proc": "/host/proc", "/dev/cpu": "/host/dev/cpu"}.items():
    check(host_paths.get(host) == inside, f"host {host} is not mounted at {inside}")
# Finding containers: the exporter reads <procfs>/cgroups and <procfs>/self/mountinfo (its own
# mounts, through the node's procfs), and walks the node's cgroup filesystems, which arrive under
# /host/sys/fs/cgroup because the runtime binds a hostPath recursively. So /sys and /proc whole
# (no subPath), exactly where paths.sysfs and procfs point, and nothing mounted over the cgroup
# filesystems or the procfs.
mounts = {m["mountPath"]: m for m in container.get("volumeMounts", [])}
for host, key in (("/sys", "sysfs"), ("/proc", "procfs")):
    path = paths[key]
    mount = mounts.get(path, {})
    check(volumes.get(mount.get("name"), {}).get("hostPath", {}).get("path") == host
          and not mount.get("subPath") and not mount.get("subPathExpr"),
          f"paths.{key} ({path}) is not where the node's whole {host} is mounted "
          "(cgroup discovery reads it)")
    check(mount.get("mountPropagation") in (None, "None", "HostToContainer"),
          f"{path} propagates mounts back to the node ({mount.get('mountPropagation')})")
for inside in mounts:
    check(not inside.startswith("/host/sys/fs/cgroup") and not inside.startswith("/host/proc/"),
          f"{inside} is mounted over the node's cgroup filesystems or procfs")
check("--config.file=/etc/hwperf/hwperf.yml" in container.get("args", []),
      "the container does not read the ConfigMap's configuration")

# Probes on /-/healthy, on the metrics port.
ports = {p.get("name"): p.get("containerPort") for p in container.get("ports", [])}
check(ports.get("metrics") == 9477, "no container port named metrics on 9477")
for probe in ("livenessProbe", "readinessProbe"):
    get = container.get(probe, {}).get("httpGet", {})
    check(get.get("path") == "/-/healthy", f"{probe} does not GET /-/healthy")
    check(get.get("port") in ("metrics", 9477), f"{probe} is not on the metrics port")

# Resources: requests and limits for CPU and memory.
resources = container.get("resources", {})
for section in ("requests", "limits"):
    for resource in ("cpu", "memory"):
        check(resource in resources.get(section, {}), f"resources.{section}.{resource} missing")

# The node name from the downward API.
check(any(e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "spec.nodeName"
          for e in container.get("env", [])), "no env from the downward API's spec.nodeName")

# The Service selects the pods and exposes the metrics port.
service = one("Service")
selector = service.get("spec", {}).get("selector", {})
labels = daemonset.get("spec", {}).get("template", {}).get("metadata", {}).get("labels", {})
check(selector and all(labels.get(k) == v for k, v in selector.items()),
      "the Service's selector does not select the DaemonSet's pods")
check(any(p.get("name") == "metrics" and p.get("port") == 9477 for p in service.get("spec", {}).get("ports", [])),
      "the Service has no metrics port 9477")

# The ServiceMonitor (or PodMonitor) scrapes them and labels each series with its node.
monitors = [o for o in objects if o.get("kind") in ("ServiceMonitor", "PodMonitor")]
check(len(monitors) == 1, f"expected one ServiceMonitor or PodMonitor, found {len(monitors)}")
for monitor in monitors:
    endpoints = monitor["spec"].get("endpoints") or monitor["spec"].get("podMetricsEndpoints") or []
    check(endpoints, f"{monitor['kind']} has no endpoints")
    for endpoint in endpoints:
        check(endpoint.get("port") == "metrics", f"{monitor['kind']} does not scrape the metrics port")
        check(any(r.get("sourceLabels") == ["__meta_kubernetes_pod_node_name"] and r.get("targetLabel") == "node"
                  for r in endpoint.get("relabelings", [])),
              f"{monitor['kind']} does not relabel __meta_kubernetes_pod_node_name to node")
    wanted = monitor["spec"].get("selector", {}).get("matchLabels", {})
    selected = service["metadata"].get("labels", {}) if monitor["kind"] == "ServiceMonitor" else labels
    check(wanted and all(selected.get(k) == v for k, v in wanted.items()),
          f"the {monitor['kind']}'s selector does not select the {'Service' if monitor['kind'] == 'ServiceMonitor' else 'pods'}")

for problem in problems:
    print(f"FAIL: {problem}", file=sys.stderr)
print(f"{len(objects)} Kubernetes objects checked, {len(problems)} problems")
sys.exit(1 if problems else 0)
