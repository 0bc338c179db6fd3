#!/usr/bin/env bash
# One entry point for people and CI:
#   ./dev.sh run [flags]  install what is missing, build, run the exporter (config/hwperf.yml, :9477)
#   ./dev.sh test         install what is missing, build, run every test (what .ci/run calls)
#   ./dev.sh sanitize     the same tests in an ASan/UBSan build (build-asan/)
#   ./dev.sh tsan         the concurrency tests in a ThreadSanitizer build (build-tsan/)
#   ./dev.sh fuzz [SECS]  the parsers under libFuzzer, SECS (60) per target (build-fuzz/)
#   ./dev.sh build        install what is missing and build (build/)
set -euo pipefail
cd "$(dirname "$0")"

build() {  # build DIR [cmake args...]; $only_target, when set, is all that is built
  local dir=$1
  shift
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
  cmake --build "$dir" -j "$(nproc)" ${only_target:+--target "$only_target"}
}

command=${1:-}
[ $# -gt 0 ] && shift
case "$command" in
  run)
    scripts/deps.sh
    build build
    exec ./build/exporter/hwperf_exporter --config.file=config/hwperf.yml "$@"
    ;;
  test)
    scripts/deps.sh
    build build
    ctest --test-dir build --output-on-failure -j "$(nproc)"
    ;;
  sanitize)
    scripts/deps.sh
    # The benchmarks are built (and compile-checked) by ./dev.sh test; they are no test.
    build build-asan -DHWPERF_SANITIZE=ON -DHWPERF_BUILD_BENCH=OFF
    ASAN_OPTIONS=detect_leaks=1 ctest --test-dir build-asan --output-on-failure -j "$(nproc)"
    ;;
  tsan)
    scripts/deps.sh
    only_target=hwperf_tests build build-tsan -DHWPERF_SANITIZE_THREAD=ON -DHWPERF_BUILD_BENCH=OFF
    # Only the tests that race on purpose: TSan cannot see into the uninstrumented libpapi and
    # CivetWeb, so elsewhere it would report their internal locking.
    TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" ./build-tsan/tests/hwperf_tests "[concurrency]"
    ;;
  fuzz)
    exec scripts/fuzz.sh "$@"
    ;;
  build)
    scripts/deps.sh
    build build
    ;;
  *)
    sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
