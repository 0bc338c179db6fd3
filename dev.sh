#!/usr/bin/env bash
# One entry point for people and CI:
#   ./dev.sh run [flags]  install what is missing, build, run the exporter (config/hwperf.yml, :9477)
#   ./dev.sh test         install what is missing, build, run every test (what .ci/run calls)
#   ./dev.sh sanitize     the same tests in an ASan/UBSan build (build-asan/)
#   ./dev.sh build        install what is missing and build (build/)
set -euo pipefail
cd "$(dirname "$0")"

build() {  # build DIR [cmake args...]
  local dir=$1
  shift
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
  cmake --build "$dir" -j "$(nproc)"
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
    build build-asan -DHWPERF_SANITIZE=ON
    ASAN_OPTIONS=detect_leaks=1 ctest --test-dir build-asan --output-on-failure -j "$(nproc)"
    ;;
  build)
    scripts/deps.sh
    build build
    ;;
  *)
    sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
