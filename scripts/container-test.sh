#!/usr/bin/env bash
# Builds deploy/Dockerfile with podman and proves the image works on this machine:
#   1. base image: a minimal Debian 13 root filesystem from mmdebstrap (cached in
#      build-debian13/rootfs.tar, shared with scripts/debian13-test.sh), imported under the
#      Dockerfile's base name, so nothing but Debian packages is downloaded;
#   2. podman build (vfs storage, chroot isolation, host network for apt);
#   3. every library of /usr/bin/hwperf_exporter resolves in the image (ldd, no "not found");
#   4. the container runs as docs/deployment.md shows (privileged, host /sys, /proc and /dev/cpu read-only
#      under /host, --path.* flags), on a free loopback port; its /metrics has hwperf_cpu_info and
#      per-CPU PAPI software-event counts for every CPU, /-/healthy answers 200 and the image's
#      HEALTHCHECK passes;
#   5. with a web config (certificates made here with openssl, mounted read-only) it serves HTTPS
#      with basic authentication: 200 with the password, 401 without;
#   6. containers: a second, busy container (the base image spinning a shell loop for a bounded
#      time) is counted by the exporter's container with the cgroup collector enabled (a config
#      file mounted read-only): its hwperf_container_clock_seconds_total{container_id="podman://<id>"}
#      grows between two scrapes.
# Run as root: sudo scripts/container-test.sh
# Images and containers live in build-container/storage (HWPERF_CONTAINER_DIR moves it), apart
# from the machine's own podman storage. Debian packages come from the mirror this machine's apt
# uses (scripts/debian-mirror.sh). The last line says PASS or FAIL.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
work=${HWPERF_CONTAINER_DIR:-$src/build-container}
rootfs_cache=$src/build-debian13/rootfs.tar
base=docker.io/library/debian:trixie-slim
image=localhost/hwperf_exporter:test
container=hwperf-container-test-$$
busy=hwperf-container-test-busy-$$
started=$SECONDS

fail() {
  echo "container-test: FAIL: $*" >&2
  exit 1
}
[ "$(id -u)" -eq 0 ] || fail "must run as root (mmdebstrap, podman with host devices)"

missing=()
for tool in podman:podman runc:runc mmdebstrap:mmdebstrap curl:curl; do
  command -v "${tool%%:*}" >/dev/null || missing+=("${tool#*:}")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "container-test: installing ${missing[*]}" >&2
  . scripts/apt.sh
  apt_install "${missing[@]}"
fi

mkdir -p "$work"
# runc, cgroupfs: crun refuses this kind of host (hybrid cgroup v1/v2) and there is no systemd
# session to manage cgroups for us. vfs needs no kernel overlay support and no fuse.
pm() {
  podman --root "$work/storage" --runroot "$work/run" --storage-driver vfs \
    --runtime runc --cgroup-manager cgroupfs --events-backend file "$@"
}

cleanup() {
  local status=$?
  if [ -n "$(pm ps -a -q --filter "name=^$container\$" 2>/dev/null)" ]; then
    [ "$status" -eq 0 ] || { echo "--- container log" >&2; pm logs "$container" >&2 || true; }
    pm rm -f "$container" >/dev/null 2>&1 || true
  fi
  if [ -n "$(pm ps -a -q --filter "name=^$busy\$" 2>/dev/null)" ]; then
    pm rm -f -t 0 "$busy" >/dev/null 2>&1 || true
  fi
  [ -z "${tmp_dirs[*]}" ] || rm -rf "${tmp_dirs[@]}"
  if [ "$status" -eq 0 ]; then
    echo "container-test: PASS: image built, libraries resolved, the marker library preloaded, metrics and health checked, a busy container counted in $((SECONDS - started)) s"
  else
    echo "container-test: FAIL (exit $status) after $((SECONDS - started)) s; see the output above"
  fi
}
tmp_dirs=()
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# 1. The base image.
if ! pm image exists "$base"; then
  if [ ! -s "$rootfs_cache" ]; then
    . scripts/debian-mirror.sh
    mirror=$(debian_mirror)
    echo "container-test: making a Debian 13 root filesystem from $mirror" >&2
    mkdir -p "$(dirname "$rootfs_cache")"
    # The same root filesystem as scripts/debian13-test.sh makes, so either script reuses it.
    mmdebstrap --quiet --variant=minbase --include=ca-certificates,sudo trixie "$work/rootfs.part.tar" \
      "deb $mirror trixie main" || fail "mmdebstrap could not make a trixie root filesystem from $mirror"
    mv "$work/rootfs.part.tar" "$rootfs_cache"
  fi
  pm import --change 'CMD ["bash"]' "$rootfs_cache" "$base" >/dev/null
fi

# 2. The image.
revision=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
version=$(sed -n 's/^project(hwperf_exporter VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
source_url=$(git remote get-url origin 2>/dev/null || echo unknown)
echo "container-test: building $image (version $version, revision $revision)" >&2
pm build --isolation chroot --network host --pull=never --format docker -f deploy/Dockerfile \
  --build-arg VERSION="$version" --build-arg REVISION="$revision" --build-arg SOURCE="$source_url" \
  -t "$image" . || fail "podman build failed"

labels=$(pm image inspect --format '{{json .Labels}}' "$image")
for key in version revision source; do
  grep -q "\"org.opencontainers.image.$key\":\"[^\"]" <<<"$labels" || fail "label org.opencontainers.image.$key missing: $labels"
done
grep -q "\"org.opencontainers.image.revision\":\"$revision\"" <<<"$labels" || fail "revision label is not $revision: $labels"

# Resource limits for every container: podman's defaults (nofile 1048576) exceed what a host
# without CAP_SYS_RESOURCE (this CI VM) lets even root set, and runc then cannot start the
# container. 65536 open files (one perf fd per CPU and event) where the hard limit allows, else
# the hard limit itself; 4096 processes (an owner thread per CPU event set), which runc could set
# here where 65536 failed.
nofile=$(ulimit -Hn); [ "$nofile" = unlimited ] || [ "$nofile" -gt 65536 ] && nofile=65536
nproc=$(ulimit -Hu); [ "$nproc" = unlimited ] || [ "$nproc" -gt 4096 ] && nproc=4096
limits=(--ulimit "nofile=$nofile:$nofile" --ulimit "nproc=$nproc:$nproc")

# 3. Every shared library resolves inside the image, the binary's and those it loads for HTTPS.
ldd_out=$(pm run --rm --network none --no-healthcheck "${limits[@]}" --entrypoint ldd "$image" \
  /usr/bin/hwperf_exporter /usr/lib/hwperf_exporter/libhwperf_civetweb_libssl.so \
  /usr/lib/hwperf_exporter/libhwperf_civetweb_libcrypto.so) \
  || fail "ldd /usr/bin/hwperf_exporter and its HTTPS libraries failed in the image"
echo "$ldd_out" | sed 's/^/  ldd: /' >&2
! grep -q "not found" <<<"$ldd_out" || fail "libraries missing in the image: $(grep 'not found' <<<"$ldd_out")"
grep -q "libpapi" <<<"$ldd_out" || fail "ldd does not list libpapi: is this the right binary?"

# 3b. The marker library --experiment.regions preloads is where the image's binary looks for it,
# and a command runs with it preloaded (ld.so says "cannot be preloaded" when it cannot).
regions_out=$(pm run --rm --network none --no-healthcheck --privileged "${limits[@]}" "$image" \
  --once --experiment.regions --log.level=info -- /bin/true 2>&1) \
  || fail "--experiment.regions -- /bin/true failed in the image: $regions_out"
preloaded=$(sed -n 's/.*--experiment.regions: preloading \([^"]*\)".*/\1/p' <<<"$regions_out")
echo "container-test: --experiment.regions preloads ${preloaded:-(nothing)}" >&2
[[ "$preloaded" == /usr/lib/* ]] || fail "the image's exporter does not preload an installed marker library: $regions_out"
! grep -q "cannot be preloaded" <<<"$regions_out" || fail "ld.so could not preload the marker library: $regions_out"

# 4. Run it as docs/deployment.md shows and scrape it.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cpus=$(nproc --all)
devcpu=()
[ -d /dev/cpu ] && devcpu=(-v /dev/cpu:/host/dev/cpu:ro)
# The image's HEALTHCHECK is run by hand below: podman schedules it with systemd timers, and
# there may be no systemd here.
pm run -d --name "$container" --network host --privileged "${limits[@]}" --health-interval disable \
  -v /sys:/host/sys:ro -v /proc:/host/proc:ro "${devcpu[@]}" \
  -e HWPERF_HEALTH_PORT="$port" \
  "$image" --config.file=/etc/hwperf/hwperf.yml --web.listen-address="127.0.0.1:$port" \
  --path.sysfs=/host/sys --path.procfs=/host/proc --path.devfs=/host/dev >/dev/null

metrics=""
for _ in $(seq 1 50); do
  if metrics=$(curl -fsS "http://127.0.0.1:$port/metrics" 2>/dev/null); then break; fi
  [ "$(pm inspect --format '{{.State.Running}}' "$container")" = true ] || fail "the exporter exited"
  sleep 0.2
done
[ -n "$metrics" ] || fail "no answer on 127.0.0.1:$port/metrics within 10 s"

for cpu in $(seq 0 $((cpus - 1))); do
  grep -Eq "^hwperf_cpu_info\{cpu=\"$cpu\",core=\"[0-9]+\",package=\"[0-9]+\",numa_node=\"[0-9]*\"\} 1$" <<<"$metrics" \
    || fail "no hwperf_cpu_info for CPU $cpu"
  # Per-CPU PAPI counts of perf software events; every machine has page faults and context switches.
  for family in hwperf_cpu_page_faults_total hwperf_cpu_context_switches_total; do
    grep -Eq "^$family\{cpu=\"$cpu\",[^}]*\} [0-9.e+]+$" <<<"$metrics" || fail "no $family for CPU $cpu"
  done
done
grep -q '^hwperf_scrape_collector_success{collector="papi"} 1$' <<<"$metrics" || fail "the papi collector failed"
grep -q '^hwperf_scrape_collector_success{collector="topology"} 1$' <<<"$metrics" || fail "the topology collector failed"
echo "container-test: metrics, e.g.:" >&2
grep -E '^hwperf_(cpu_info|cpu_page_faults_total|cpu_context_switches_total|rapl_energy_available|build_info)' <<<"$metrics" | sed 's/^/  /' >&2
grep -q "revision=\"$revision\"" <<<"$metrics" || fail "hwperf_build_info does not carry revision $revision"

[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/-/healthy")" = 200 ] || fail "/-/healthy is not 200"
pm healthcheck run "$container" || fail "the image's HEALTHCHECK fails"
echo "container-test: HEALTHCHECK passes" >&2
pm rm -f "$container" >/dev/null

# 5. HTTPS with basic authentication, from a web config mounted into the container.
tls_dir=$(mktemp -d)
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=127.0.0.1 \
  -addext subjectAltName=IP:127.0.0.1 -keyout "$tls_dir/server.key" -out "$tls_dir/server.crt" \
  2>/dev/null || fail "openssl could not make a test certificate"
password=container-test
hash=$(python3 -c 'import crypt, sys; print(crypt.crypt(sys.argv[1], crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=2**5)))' "$password" 2>/dev/null) \
  || fail "python3 could not make a bcrypt hash"
printf 'tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\nbasic_auth_users:\n  prometheus: %s\n' \
  "$hash" >"$tls_dir/web.yml"
chmod 0644 "$tls_dir"/*
pm run -d --name "$container" --network host --privileged "${limits[@]}" --health-interval disable \
  -v /sys:/host/sys:ro -v /proc:/host/proc:ro -v "$tls_dir:/etc/hwperf/tls:ro" \
  "$image" --config.file=/etc/hwperf/hwperf.yml --web.listen-address="127.0.0.1:$port" \
  --web.config.file=/etc/hwperf/tls/web.yml \
  --path.sysfs=/host/sys --path.procfs=/host/proc --path.devfs=/host/dev >/dev/null
status=000
for _ in $(seq 1 50); do
  status=$(curl -s -o "$tls_dir/metrics" -w '%{http_code}' --cacert "$tls_dir/server.crt" \
    -u "prometheus:$password" "https://127.0.0.1:$port/metrics" || true)
  [ "$status" = 200 ] && break
  [ "$(pm inspect --format '{{.State.Running}}' "$container")" = true ] || fail "the exporter with TLS exited"
  sleep 0.2
done
[ "$status" = 200 ] || fail "HTTPS scrape with the password answered $status"
grep -q '^hwperf_cpu_info{cpu="0"' "$tls_dir/metrics" || fail "no hwperf_cpu_info over HTTPS"
status=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$tls_dir/server.crt" "https://127.0.0.1:$port/metrics" || true)
[ "$status" = 401 ] || fail "HTTPS scrape without the password answered $status, not 401"
rm -rf "$tls_dir"
echo "container-test: HTTPS with basic authentication: 200 with the password, 401 without" >&2

# 6. Containers: the cgroup collector counts a busy container. podman (runc, cgroupfs manager)
# puts it in libpod_parent/libpod-<id> in every hierarchy, cgroup2 included (on this hybrid host
# /sys/fs/cgroup/unified), which is where the perf_event controller filters when /proc/cgroups
# gives it hierarchy 0; the exporter finds that mount through /host/proc/self/mountinfo (the
# recursive bind of /sys) and counts the leaf as container_id podman://<id>.
pm rm -f "$container" >/dev/null
pm run -d --name "$busy" --network none --no-healthcheck "${limits[@]}" --entrypoint timeout \
  "$base" 600 sh -c 'while :; do :; done' >/dev/null || fail "the busy container did not start"
busy_id=$(pm inspect --format '{{.Id}}' "$busy")
busy_pid=$(pm inspect --format '{{.State.Pid}}' "$busy")
[ "${busy_pid:-0}" -gt 0 ] && [ -r "/proc/$busy_pid/cgroup" ] ||
  fail "the busy container $busy_id is not running (pid ${busy_pid:-none})"
busy_cgroup=$(sed -n 's/^0:://p' "/proc/$busy_pid/cgroup")
echo "container-test: busy container $busy_id, pid $busy_pid, cgroup v2 path ${busy_cgroup:-(none)}" >&2
sed 's/^/  \/proc\/'"$busy_pid"'\/cgroup: /' "/proc/$busy_pid/cgroup" >&2
cgroup_dir=$(mktemp -d)
tmp_dirs+=("$cgroup_dir")
# The defaults (which the image's own configuration spells out) and the cgroup collector.
printf 'collectors:\n  cgroup:\n    enabled: true\n' >"$cgroup_dir/hwperf.yml"
chmod 0755 "$cgroup_dir" && chmod 0644 "$cgroup_dir/hwperf.yml"
pm run -d --name "$container" --network host --privileged "${limits[@]}" --health-interval disable \
  -v /sys:/host/sys:ro -v /proc:/host/proc:ro "${devcpu[@]}" -v "$cgroup_dir:/etc/hwperf/cgroup:ro" \
  "$image" --config.file=/etc/hwperf/cgroup/hwperf.yml --web.listen-address="127.0.0.1:$port" \
  --path.sysfs=/host/sys --path.procfs=/host/proc --path.devfs=/host/dev >/dev/null

# The busy container's CPU seconds, summed over packages; empty while it is not counted.
busy_seconds() {
  awk -v id="container_id=\"podman://$busy_id\"" \
    '/^hwperf_container_clock_seconds_total\{/ && index($0, id) { sum += $NF; n++ }
     END { if (n) printf "%.6f\n", sum }' <<<"$1"
}
cgroup_diagnosis() {
  echo "container-test: the exporter's view of cgroups:" >&2
  grep -E '^hwperf_(container_(hierarchy_info|cgroups|left_out|open_counters|read_errors_total)|scrape_collector_success\{collector="cgroup"\})' \
    <<<"$metrics" | sed 's/^/  /' >&2 || true
  pm logs "$container" 2>&1 | grep -E 'cgroup' | sed 's/^/  log: /' >&2 || true
}
metrics="" first=""
for _ in $(seq 1 75); do
  metrics=$(curl -fsS "http://127.0.0.1:$port/metrics" 2>/dev/null) || metrics=""
  first=$(busy_seconds "$metrics")
  [ -n "$first" ] && break
  [ "$(pm inspect --format '{{.State.Running}}' "$container")" = true ] ||
    fail "the exporter with the cgroup collector exited"
  sleep 0.2
done
if [ -z "$first" ]; then
  cgroup_diagnosis
  fail "no hwperf_container_clock_seconds_total{container_id=\"podman://$busy_id\"} within 15 s (busy container's cgroup v2 path: ${busy_cgroup:-none})"
fi
grep -q '^hwperf_scrape_collector_success{collector="cgroup"} 1$' <<<"$metrics" || fail "the cgroup collector failed"
first_at=$(date +%s.%N)
sleep 2
metrics=$(curl -fsS "http://127.0.0.1:$port/metrics") || fail "the second scrape failed"
second=$(busy_seconds "$metrics")
second_at=$(date +%s.%N)
echo "container-test: busy container counted:" >&2
grep -E "^hwperf_container_clock_seconds_total\{container_id=\"podman://$busy_id\"|^hwperf_container_(hierarchy_info|cgroups)[{ ]" \
  <<<"$metrics" | sed 's/^/  /' >&2
pm logs "$container" 2>&1 | grep -F "cgroup: counting " | sed 's/^/  log: /' >&2 || true
awk -v a="$first" -v b="${second:-0}" -v t0="$first_at" -v t1="$second_at" \
  'BEGIN { printf "container-test: CPU seconds %s -> %s, %.2f s/s\n", a, b, (b - a) / (t1 - t0) }' >&2
if ! awk -v a="$first" -v b="${second:-0}" 'BEGIN { exit !(b > a) }'; then
  cgroup_diagnosis
  fail "the busy container's hwperf_container_clock_seconds_total did not grow ($first, then ${second:-absent})"
fi
pm rm -f "$container" >/dev/null
pm rm -f -t 0 "$busy" >/dev/null
echo "container-test: the cgroup collector counts the busy container" >&2
