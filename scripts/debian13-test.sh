#!/usr/bin/env bash
# Builds hwperf_exporter and runs every test inside a Debian 13 (trixie) root filesystem, the
# distribution the container image is built on: prometheus-cpp, CivetWeb 1.16, yaml-cpp 0.8,
# Catch2 3 and PAPI 7.1 instead of Debian 12's. Run as root (CI does):
#   scripts/debian13-test.sh
# The root filesystem is made once with mmdebstrap from the mirror this machine's apt uses and
# kept in build-debian13/ (delete it to start afresh), with the .deb files scripts/deps.sh
# downloads (build-debian13/apt-archives), so reruns fetch nothing new; the root filesystem is
# unpacked afresh and the source tree copied in each run. The last line says PASS or FAIL.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "debian13-test.sh: FAIL: run as root (it uses chroot)" >&2; exit 1; }

# Everything mounted below lives in a private mount namespace: nothing propagates to the host
# (unmounting a bind of /dev/pts there must not unmount the host's), and the kernel drops the
# mounts when the script ends, whatever way it ends.
if [ -z "${HWPERF_DEBIAN13_PRIVATE:-}" ]; then
  export HWPERF_DEBIAN13_PRIVATE=1
  exec unshare --mount --propagation private "$0" "$@"
fi

. scripts/debian-mirror.sh
work=$PWD/build-debian13
root=$work/root
started=$SECONDS
export DEBIAN_FRONTEND=noninteractive
if ! command -v mmdebstrap >/dev/null; then
  . scripts/apt.sh
  apt_install mmdebstrap
fi
mkdir -p "$work/apt-archives"
if [ ! -f "$work/rootfs.tar" ]; then
  echo "debian13-test.sh: making a Debian 13 root filesystem"
  # mmdebstrap picks the output format from the file name, hence .part.tar.
  mmdebstrap --quiet --variant=minbase --include=ca-certificates,sudo trixie "$work/rootfs.part.tar" \
    "deb $(debian_mirror) trixie main"
  mv "$work/rootfs.part.tar" "$work/rootfs.tar"
fi

unmount_all() {
  local mount
  for mount in $(findmnt -rn -o TARGET | grep -F "$root/" | sort -r); do
    umount -l "$mount" 2>/dev/null || true
  done
}
finish() {
  local status=$?
  unmount_all
  if [ "$status" -eq 0 ]; then
    echo "debian13-test.sh: PASS: Debian 13 build and tests passed in $((SECONDS - started)) s"
  else
    echo "debian13-test.sh: FAIL (exit $status) after $((SECONDS - started)) s, see above"
  fi
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
unmount_all
# --one-file-system: never descend into anything still mounted under the old root.
rm -rf --one-file-system "$root"
mkdir -p "$root"
tar -xf "$work/rootfs.tar" -C "$root"
# The source as it is in this tree, without any build folder.
mkdir -p "$root/src"
tar --exclude='./build*' --exclude='./.git' -cf - . | tar -xf - -C "$root/src"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# Packages must not start their services (prometheus) inside the chroot.
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 755 "$root/usr/sbin/policy-rc.d"
mount -t proc proc "$root/proc"
mount --rbind /sys "$root/sys"
mount --rbind /dev "$root/dev"
mount --bind "$work/apt-archives" "$root/var/cache/apt/archives"

chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
  DEBIAN_FRONTEND=noninteractive bash -c '
    set -euo pipefail
    cd /src
    . /etc/os-release
    echo "debian13-test.sh: inside $PRETTY_NAME"
    scripts/deps.sh
    # What this step is for is the other compiler, libraries and Catch2 3: no debug info (a
    # third less compile time) and no benchmarks (they include no test framework).
    cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG" \
      -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG" -DHWPERF_BUILD_BENCH=OFF >/dev/null
    cmake --build build -j "$(nproc)"
    ctest --test-dir build --output-on-failure -j "$(nproc)"
  '
