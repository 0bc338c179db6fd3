#!/usr/bin/env bash
# scripts/arm64-sysroot.sh DIR: unpacks Debian 12's arm64 builds of the libraries hwperf_exporter
# links (and their dependencies) into DIR, a sysroot for cmake/aarch64-linux-gnu.cmake and for
# qemu-aarch64-static -L DIR. Nothing is installed into the machine: `apt-get install
# libpapi-dev:arm64` removes the amd64 libpapi-dev, libpfm4-dev and libyaml-cpp-dev (they are not
# co-installable) and leaves dpkg half-configured, so mmdebstrap only extracts the packages into
# DIR with an apt state of its own (--variant=extract runs no maintainer script, so no emulator
# is needed). Installs crossbuild-essential-arm64, qemu-user-static and mmdebstrap when missing.
# Reuses DIR when it was made from the same package list.
set -euo pipefail
sysroot=${1:?usage: scripts/arm64-sysroot.sh DIR}
here=$(cd "$(dirname "$0")" && pwd)

packages=(
  libc6-dev libstdc++-12-dev libcrypt-dev
  libpapi-dev libpfm4-dev libhwloc-dev prometheus-cpp-dev libcivetweb-dev libyaml-cpp-dev
  zlib1g-dev libdeflate-dev libssl-dev catch2
)
stamp="$sysroot/.hwperf-sysroot"
wanted="bookworm arm64: ${packages[*]}"
if [ -e "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ]; then
  exit 0
fi

tools=()
for p in crossbuild-essential-arm64 qemu-user-static mmdebstrap; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || tools+=("$p")
done
. "$here/apt.sh"
if [ ${#tools[@]} -gt 0 ]; then
  echo "arm64-sysroot.sh: installing ${tools[*]}" >&2
  apt_install "${tools[@]}"
fi

. "$here/debian-mirror.sh"
mirror=$(debian_mirror)
rm -rf "$sysroot"
include=$(IFS=,; echo "${packages[*]}")
$apt_sudo mmdebstrap --quiet --variant=extract --architectures=arm64 --include="$include" \
  bookworm "$sysroot" \
  "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror bookworm main"
# Debian's development links are absolute (libz.so -> /lib/aarch64-linux-gnu/libz.so.1.2.13):
# inside a sysroot they would name the machine's own files, so each is made relative.
while IFS= read -r link; do
  target=$(readlink "$link")
  $apt_sudo ln -sfn "$(realpath -m --relative-to="$(dirname "$link")" "$sysroot$target")" "$link"
done < <(find "$sysroot" -type l -lname '/*')
echo "$wanted" | $apt_sudo tee "$stamp" >/dev/null
echo "arm64-sysroot.sh: $sysroot holds ${#packages[@]} packages and their dependencies" >&2
