#!/usr/bin/env bash
# User-space instructions per keep-alive scrape of the RAPL fixture (bench/rapl_fixture.sh, the
# configuration scripts/bench-side-by-side.sh measures) through the real server: the exporter
# runs under valgrind's callgrind, one connection sends 50 scrapes of warm-up, the counts are
# zeroed, N more are sent, and the counts dumped. Prints the instructions per scrape and where
# they go (callgrind_annotate, inclusive), the robust figure on a machine whose timings are noisy.
#
#   bench/callgrind-scrapes.sh [gzip|identity] [SCRAPES] [EXPORTER]   (gzip, 1000, build/exporter/hwperf_exporter)
#
# Needs valgrind (apt-get install valgrind) and python3. About a minute.
set -euo pipefail
cd "$(dirname "$0")/.."
encoding=${1:-gzip}
scrapes=${2:-1000}
exporter=${3:-build/exporter/hwperf_exporter}
port=${HWPERF_PORT:-19479}
for tool in valgrind callgrind_control callgrind_annotate python3 curl "$exporter"; do
  command -v "$tool" >/dev/null || { echo "missing $tool" >&2; exit 1; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/hwperf-callgrind-XXXXXX")
pid=""
cleanup() {
  if [[ -n "$pid" ]]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

. bench/rapl_fixture.sh
write_rapl_fixture "$work"
valgrind --tool=callgrind --callgrind-out-file="$work/callgrind.out" "$exporter" \
  --config.file="$work/hwperf.yml" --web.listen-address="127.0.0.1:$port" 2>"$work/exporter.log" &
pid=$!
for _ in $(seq 300); do
  curl -fsS -o /dev/null "http://127.0.0.1:$port/metrics" 2>/dev/null && break
  sleep 0.2
done
move_rapl_counters "$work"

scrape() {  # N: N scrapes on one kept-alive connection
  python3 bench/keepalive_get.py "$port" --count "$1" ${gzip_flag:+"$gzip_flag"}
}
gzip_flag=""
if [[ "$encoding" == gzip ]]; then gzip_flag=--gzip; fi
scrape 50
callgrind_control -z "$pid" >/dev/null
scrape "$scrapes"
callgrind_control -d "$pid" >/dev/null
sleep 1
total=$(callgrind_annotate "$work/callgrind.out.1" 2>/dev/null |
  awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1; exit }')
echo "$encoding: $((total / scrapes)) instructions per scrape ($scrapes scrapes, $total in all)"
echo "where they go (inclusive, per scrape):"
callgrind_annotate --inclusive=yes "$work/callgrind.out.1" 2>/dev/null |
  awk -v n="$scrapes" '/file:function/ { on = 1; next }
    on && $1 ~ /^[0-9,]+$/ { v = $1; gsub(",", "", v); if (v / n < 1000) exit;
      sub(/^[^ ]+ +\([^)]*\) +/, ""); sub(/ \[.*$/, ""); sub(/^[^:]*:/, "");
      if (!seen[$0]++) printf "%8.1fk  %s\n", v / n / 1000, substr($0, 1, 110) }' | head -30
