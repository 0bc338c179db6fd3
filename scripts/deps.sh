#!/usr/bin/env bash
# Installs the Debian 12 packages hwperf_exporter builds and tests with, only those missing.
# Idempotent and quiet; works as root (CI, containers) or through sudo.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git
  libpapi-dev papi-tools libhwloc-dev hwloc
  prometheus-cpp-dev libcivetweb-dev libyaml-cpp-dev zlib1g-dev catch2
  prometheus   # promtool and the server, for the end-to-end tests
  util-linux   # taskset, for the PAPI per-CPU test
  python3      # the PAPI per-CPU test's memory toucher
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
echo "installing: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
