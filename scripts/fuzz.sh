#!/usr/bin/env bash
# Fuzzes the parsers that take outside input (the YAML config, the web config with its
# Authorization header, Accept/Accept-Encoding, and the region segment a measured program
# writes), and the gzip encoder of our own (exporter/compression/trained_deflate), with libFuzzer
# for a bounded time each.
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET]   (default 60; CI uses the default)
# A crash leaves its input in build-fuzz/findings/ and fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
scripts/deps.sh
if ! command -v clang++ >/dev/null || ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  . scripts/apt.sh
  apt_install clang libclang-rt-dev 2>/dev/null || apt_install clang libclang-rt-14-dev
fi
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DHWPERF_FUZZ=ON -DHWPERF_BUILD_TESTS=OFF >/dev/null
cmake --build build-fuzz -j "$(nproc)" --target fuzz_config fuzz_accept fuzz_web_config fuzz_region_segment \
  fuzz_trained_deflate
mkdir -p build-fuzz/findings
# One target per CPU at a time: libFuzzer runs on one thread, and CI waits for all of them.
fuzz_one() {
  local target=$1 corpus=build-fuzz/corpus/$1
  mkdir -p "$corpus"
  cp -n fuzz/corpus/$target/* "$corpus/" 2>/dev/null || true
  echo "fuzzing $target for ${seconds}s"
  if ! ASAN_OPTIONS=detect_leaks=1 "build-fuzz/fuzz/fuzz_$target" -max_total_time="$seconds" \
       -max_len=4096 -timeout=10 -rss_limit_mb=2048 -artifact_prefix=build-fuzz/findings/ \
       -print_final_stats=1 "$corpus" >"build-fuzz/fuzz_$target.log" 2>&1; then
    echo "fuzz_$target FAILED: see build-fuzz/fuzz_$target.log and build-fuzz/findings/"
    tail -40 "build-fuzz/fuzz_$target.log"
    return 1
  fi
  grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb" "build-fuzz/fuzz_$target.log" |
    sed "s/^/  $target: /"
}
status=0
running=0
for target in config accept web_config region_segment trained_deflate; do
  if [ "$running" -ge "$(nproc)" ]; then
    wait -n || status=1
    running=$((running - 1))
  fi
  fuzz_one "$target" &
  running=$((running + 1))
done
while [ "$running" -gt 0 ]; do
  wait -n || status=1
  running=$((running - 1))
done
exit $status
