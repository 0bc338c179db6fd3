#!/usr/bin/env bash
# The arm64 build and its tests, on an x86-64 Debian 12 machine (CI's `arm64` step): cross-compiled
# with crossbuild-essential-arm64 against Debian 12's arm64 libraries unpacked into a sysroot of the
# build's own (scripts/arm64-sysroot.sh; nothing of arm64 is installed into the machine), and the
# test binary run under qemu-aarch64-static -L SYSROOT, called explicitly (binfmt_misc is not
# mounted on the CI machine). The tests that start the exporter start it through the same emulator
# (HWPERF_TEST_EMULATOR). qemu-user does not implement perf_event_open (ENOSYS), so the tests that
# need the kernel's perf events ([kernel_perf]) or libpfm4's x86 tables ([x86]) are left out, with
# [live] and the hidden ones; everything on fixtures runs, and libpfm4's arm64 tables encode the
# Neoverse events of the built-in groups.
#   scripts/arm64-test.sh [CATCH2 TEST SPEC...]
set -euo pipefail
cd "$(dirname "$0")/.."
sysroot=${HWPERF_ARM64_SYSROOT:-/var/cache/hwperf_exporter/arm64-sysroot}
scripts/arm64-sysroot.sh "$sysroot"
# No debug info and -O1: this build exists to run the tests once, and compiling is most of its time.
cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
  -DHWPERF_ARM64_SYSROOT="$sysroot" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -DNDEBUG" \
  -DHWPERF_BUILD_BENCH=OFF >/dev/null
cmake --build build-arm64 -j "$(nproc)" --target hwperf_tests
emulator="qemu-aarch64-static -L $sysroot"
file build-arm64/tests/hwperf_tests | grep -q "ARM aarch64" ||
  { echo "arm64-test.sh: build-arm64/tests/hwperf_tests is not an arm64 binary" >&2; exit 1; }
spec=("$@")
[ ${#spec[@]} -gt 0 ] || spec=("~[live]~[.]~[kernel_perf]~[x86]")
HWPERF_TEST_EMULATOR="$emulator" $emulator build-arm64/tests/hwperf_tests "${spec[@]}"
