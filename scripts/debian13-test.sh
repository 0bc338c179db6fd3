#!/usr/bin/env bash
# Builds hwperf_exporter and runs every test inside a Debian 13 (trixie) root filesystem, the
# distribution the container image is built on: prometheus-cpp, CivetWeb 1.16, yaml-cpp 0.8,
# Catch2 3 and PAPI 7.1 instead of Debian 12's. Run as root (CI does):
#   scripts/debian13-test.sh
# The root filesystem is made once with mmdebstrap from the mirror this machine's apt uses and
# kept in build-debian13/ (delete it to start afresh); the source tree is copied in each run.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "debian13-test.sh: run as root (it uses chroot)" >&2; exit 1; }
. scripts/debian-mirror.sh

work=build-debian13
root=$work/root
export DEBIAN_FRONTEND=noninteractive
if ! command -v mmdebstrap >/dev/null; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends mmdebstrap >/dev/null
fi
mkdir -p "$work"
if [ ! -f "$work/rootfs.tar" ]; then
  echo "debian13-test.sh: making a Debian 13 root filesystem"
  mmdebstrap --quiet --variant=minbase --format=tar --include=ca-certificates,sudo trixie \
    "$work/rootfs.tar.part" \
    "deb $(debian_mirror) trixie main"
  mv "$work/rootfs.tar.part" "$work/rootfs.tar"
fi

unmount_all() {
  for mount in "$root/dev/pts" "$root/dev" "$root/sys" "$root/proc"; do
    mountpoint -q "$mount" && umount -l "$mount"
  done
  return 0
}
trap unmount_all EXIT
unmount_all
rm -rf "$root"
mkdir -p "$root"
tar -xf "$work/rootfs.tar" -C "$root"
# The source as it is in this tree, without any build folder.
mkdir -p "$root/src"
tar --exclude='./build*' --exclude='./.git' -cf - . | tar -xf - -C "$root/src"
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc"
mount --rbind /sys "$root/sys"
mount --rbind /dev "$root/dev"

chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
  DEBIAN_FRONTEND=noninteractive bash -c '
    set -euo pipefail
    cd /src
    . /etc/os-release
    echo "debian13-test.sh: inside $PRETTY_NAME"
    scripts/deps.sh
    cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build build -j "$(nproc)"
    ctest --test-dir build --output-on-failure -j "$(nproc)"
  '
echo "debian13-test.sh: Debian 13 build and tests passed"
