#!/usr/bin/env bash
# Installs the Debian 12 packages hwperf_exporter builds and tests with, only those missing.
# Idempotent and quiet; works as root (CI, containers) or through sudo.
# --build-only: only what the build needs (no test tools); used by deploy/Dockerfile.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git
  libpapi-dev papi-tools libhwloc-dev hwloc
  prometheus-cpp-dev libcivetweb-dev libyaml-cpp-dev zlib1g-dev libdeflate-dev libssl-dev catch2
  prometheus   # promtool and the server, for the end-to-end tests
  util-linux   # taskset, for the PAPI per-CPU test
  python3      # the PAPI per-CPU test's memory toucher
  openssl curl # the HTTPS tests: certificates made per test, and a TLS client
  chromium chromium-driver python3-selenium  # the /topology page tested in a real browser
  linux-perf   # perf stat, the reference experiment mode's summary is compared with
)

# libpfm4's headers encode perf events for the process targets (collectors/perf). They must match
# the libpfm4 that is installed: on Debian 12 that is Debian 13's, fetched below with its library.
. /etc/os-release
[ "${VERSION_CODENAME:-}" = bookworm ] || packages+=(libpfm4-dev)

# --- Deployment checks (tests/deploy) and the container build; Debian 12 and 13 alike. ---------
# systemd-analyze verifies the unit; kubectl renders the manifests. kubernetes-client only when no
# kubectl is installed yet: another package may already own /usr/bin/kubectl, and the two conflict.
packages+=(systemd)
command -v kubectl >/dev/null || packages+=(kubernetes-client)
# --build-only: what compiling the exporter needs, no test tools (deploy/Dockerfile's build stage).
if [ "${1:-}" = "--build-only" ]; then
  test_only=" papi-tools hwloc catch2 prometheus util-linux python3 openssl curl systemd kubernetes-client "
  test_only+=" chromium chromium-driver python3-selenium linux-perf "
  build_packages=()
  for p in "${packages[@]}"; do
    [[ $test_only == *" $p "* ]] || build_packages+=("$p")
  done
  packages=("${build_packages[@]}")
fi
# ------------------------------------------------------------------------------------------------

sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
. "$(dirname "$0")/apt.sh"
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}" >&2
  apt_install "${missing[@]}"
fi

# Debian 12's libpfm4 (4.13.0) does not know Emerald Rapids, Granite Rapids or Zen 5; on those
# CPUs PAPI disables its whole perf_event component, software events included. Debian 13's libpfm4
# (same soname libpfm.so.4, depends only on libc6) knows them, so on Debian 12 that one package is
# taken from Debian 13. The Debian 13 index is read into a temporary directory through the mirror
# the system already uses: the system's package sources and lists are left as they were.
# Debian 12's own library is kept under $debian12_libpfm_dir for the end-to-end test that shows
# the exporter still serves when PAPI cannot start.
debian12_libpfm_dir=/var/cache/hwperf_exporter/libpfm4-debian12
if [ "${VERSION_CODENAME:-}" = bookworm ]; then
  if ! dpkg --compare-versions "$(dpkg-query -W -f='${Version}' libpfm4)" gt 4.13.0-1 ||
     ! dpkg --compare-versions "$(dpkg-query -W -f='${Version}' libpfm4-dev 2>/dev/null || echo 0)" \
       eq "$(dpkg-query -W -f='${Version}' libpfm4)" ||
     [ ! -e "$debian12_libpfm_dir/libpfm.so.4" ]; then
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    . "$(dirname "$0")/debian-mirror.sh"
    mirror=$(debian_mirror)
    mkdir -p "$work/lists/partial" "$work/archives/partial" "$work/debs"
    echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror trixie main" \
      > "$work/trixie.list"
    echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror bookworm main" \
      > "$work/bookworm.list"
    fetch_deb() {  # fetch_deb SUITE_LIST PACKAGE...: downloads those packages of that suite into $work/debs
      local opts=(-o Dir::Etc::SourceList="$1" -o Dir::Etc::SourceParts=/dev/null
                  -o Dir::State::Lists="$work/lists" -o Dir::Cache::Archives="$work/archives"
                  -o APT::Sandbox::User=root -qq)
      rm -rf "$work/lists"/* && mkdir -p "$work/lists/partial"
      $sudo apt-get "${opts[@]}" update
      (cd "$work/debs" && $sudo apt-get "${opts[@]}" download "${@:2}" >/dev/null)
    }
    # Suite-qualified names: the version already installed may be the other suite's.
    if [ ! -e "$debian12_libpfm_dir/libpfm.so.4" ]; then
      fetch_deb "$work/bookworm.list" libpfm4/bookworm
      mkdir -p "$work/debian12" && dpkg-deb -x "$work"/debs/libpfm4_*.deb "$work/debian12"
      $sudo mkdir -p "$debian12_libpfm_dir"
      $sudo cp -L "$work"/debian12/usr/lib/*/libpfm.so.4 "$debian12_libpfm_dir/"
      rm -f "$work"/debs/*.deb
    fi
    fetch_deb "$work/trixie.list" libpfm4/trixie libpfm4-dev/trixie
    apt_recover
    $sudo dpkg -i "$work"/debs/libpfm4_*.deb "$work"/debs/libpfm4-dev_*.deb >/dev/null
    echo "deps.sh: installed Debian 13's libpfm4 and libpfm4-dev $(dpkg-query -W -f='${Version}' libpfm4)" \
         "(Debian 12's does not know Emerald Rapids, Granite Rapids or Zen 5)" >&2
  fi
fi
