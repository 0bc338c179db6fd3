#!/usr/bin/env bash
# Checks the deployment files under deploy/ with the real tools (run by CTest as deploy_manifests):
#   Prometheus  promtool check config, check rules; deploy/prometheus.yml loads every rule file
#               under deploy/prometheus/, and every *_test.yml there and under tests/deploy/ passes
#               promtool test rules (tests/deploy/ksm_join_test.yml: the kube-state-metrics join
#               of docs/collectors/cgroup.md)
#   Groups      deploy/prometheus/group_rules.yml is `--print-rules` on the default configuration,
#               tests/deploy/all_groups.rules.yml is `--print-rules` with tests/deploy/all_groups.yml
#               (every built-in group in papi, process and cgroup); promtool reads both, and
#               tests/deploy/all_groups.rules_test.yml checks every group's formulas
#   Grafana     every query of deploy/grafana/hwperf.json, its variables given concrete values,
#               parsed by promtool as a rules file; every recording rule a query reads is recorded
#               by a rule file deploy/prometheus.yml loads
#   Kubernetes  kubectl reads every manifest offline; the fields that matter are asserted; the
#               ConfigMap's configuration passes the exporter's own --check-config, its cgroup
#               collector finding the perf_event hierarchy here
#   systemd     systemd-analyze verify on the unit, pointed at the built binary
# A missing tool is a failure naming its Debian package (scripts/deps.sh installs them all).
# Usage: check_deploy.sh SOURCE_DIR EXPORTER_BINARY
set -euo pipefail
src=${1:?usage: check_deploy.sh SOURCE_DIR EXPORTER_BINARY}
exporter=${2:?usage: check_deploy.sh SOURCE_DIR EXPORTER_BINARY}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
step() { echo "== $*"; }

for need in promtool:prometheus kubectl:kubernetes-client systemd-analyze:systemd python3:python3; do
  command -v "${need%%:*}" >/dev/null ||
    { echo "FAIL: ${need%%:*} not found: install the Debian package ${need#*:} (scripts/deps.sh does)" >&2; exit 1; }
done
[ -x "$exporter" ] || { echo "FAIL: exporter binary $exporter missing" >&2; exit 1; }

step "promtool check config deploy/prometheus.yml (with its rule files)"
promtool check config "$src/deploy/prometheus.yml" || fail "deploy/prometheus.yml"
# Every rule file under deploy/prometheus/ (the *_test.yml beside them are promtool's tests).
rule_files=()
for path in "$src"/deploy/prometheus/*.yml; do
  case $path in *_test.yml) continue ;; esac
  rule_files+=("$(basename "$path")")
done
for rules in "${rule_files[@]}"; do
  grep -q "^  - prometheus/$rules\$" "$src/deploy/prometheus.yml" ||
    fail "deploy/prometheus.yml does not load prometheus/$rules"
done

step "promtool check rules / test rules deploy/prometheus/ and tests/deploy/"
for rules in "${rule_files[@]}"; do
  promtool check rules "$src/deploy/prometheus/$rules" || fail "deploy/prometheus/$rules"
done
for test_file in "$src"/deploy/prometheus/*_test.yml "$src"/tests/deploy/*_test.yml; do
  (cd "$(dirname "$test_file")" && promtool test rules "$(basename "$test_file")") ||
    fail "${test_file#"$src"/}"
done

# generated CHECKED_IN [FLAGS...]: the checked-in rule file must be what --print-rules prints,
# and promtool must read it.
generated() {
  local checked_in=$1
  shift
  local out
  out=$tmp/$(basename "$checked_in")
  if ! (cd "$src" && "$exporter" "$@" --print-rules) >"$out"; then
    fail "$exporter $* --print-rules failed (its log above)"
    return
  fi
  promtool check rules "$out" || fail "promtool check rules refuses what $* --print-rules prints"
  diff -u "$src/$checked_in" "$out" ||
    fail "$checked_in differs from what the exporter generates (diff above: - checked in, + generated); regenerate it from the source directory with:
  $exporter $* --print-rules > $checked_in"
}
step "event groups: deploy/prometheus/group_rules.yml is --print-rules on the default configuration"
generated deploy/prometheus/group_rules.yml
step "event groups: tests/deploy/all_groups.rules.yml is --print-rules with every built-in group"
generated tests/deploy/all_groups.rules.yml --config.file=tests/deploy/all_groups.yml

step "Grafana: every query of deploy/grafana/hwperf.json parses"
python3 "$here/grafana_queries.py" "$src/deploy/grafana/hwperf.json" "$tmp/grafana_rules.yml" \
  "$src/deploy/prometheus.yml" ||
  fail "deploy/grafana/hwperf.json"
if [ -s "$tmp/grafana_rules.yml" ]; then
  promtool check rules "$tmp/grafana_rules.yml" || fail "a Grafana query does not parse (rules file: see above)"
fi

step "Kubernetes: kubectl reads deploy/kubernetes/ offline; fields asserted"
if kubectl label --local -f "$src/deploy/kubernetes/" -o json hwperf-check=1 >"$tmp/manifests.json" 2>"$tmp/kubectl.err"; then
  python3 "$here/k8s_manifests.py" "$tmp/manifests.json" "$tmp/configmap-hwperf.yml" || fail "deploy/kubernetes/"
else
  cat "$tmp/kubectl.err" >&2
  fail "kubectl cannot read deploy/kubernetes/"
fi
if [ -s "$tmp/configmap-hwperf.yml" ]; then
  # The ConfigMap's configuration must be valid for this exporter. Its paths point at /host/*,
  # the pod's mounts; the flags (which override the file) point them at this machine.
  if ! "$exporter" --config.file="$tmp/configmap-hwperf.yml" --check-config \
       --path.sysfs=/sys --path.procfs=/proc --path.devfs=/dev >"$tmp/check-config.out" 2>&1; then
    cat "$tmp/check-config.out" >&2
    fail "the ConfigMap's hwperf.yml fails hwperf_exporter --check-config"
  elif ! grep -q '^# cgroup: perf_event hierarchy: ' "$tmp/check-config.out"; then
    cat "$tmp/check-config.out" >&2
    fail "with the ConfigMap's hwperf.yml, --check-config reports no perf_event cgroup hierarchy"
  fi
fi

step "systemd-analyze verify deploy/systemd/hwperf-exporter.service"
unit=$src/deploy/systemd/hwperf-exporter.service
grep -q '^ExecStart=/usr/local/bin/hwperf_exporter ' "$unit" || fail "unexpected ExecStart in $unit"
mkdir -p "$tmp/unit"
sed "s|^ExecStart=/usr/local/bin/hwperf_exporter |ExecStart=$exporter |" "$unit" >"$tmp/unit/hwperf-exporter.service"
if ! systemd-analyze verify "$tmp/unit/hwperf-exporter.service" >"$tmp/verify.out" 2>&1 || [ -s "$tmp/verify.out" ]; then
  cat "$tmp/verify.out" >&2
  fail "systemd-analyze verify reports problems in deploy/systemd/hwperf-exporter.service"
fi
for directive in 'LimitNOFILE=65536' 'CapabilityBoundingSet=CAP_PERFMON CAP_SYS_RAWIO' \
                 'SystemCallFilter=@system-service perf_event_open' 'ProtectSystem=strict'; do
  grep -qx "$directive" "$unit" || fail "$unit lacks $directive"
done

if [ "$failures" -gt 0 ]; then
  echo "deploy checks: $failures failed" >&2
  exit 1
fi
echo "deploy checks: all passed"
