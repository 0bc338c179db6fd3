#!/usr/bin/env bash
# Soak test of the HTTP server (not part of ctest: it takes ~30 s and wants an idle machine).
# Runs the exporter on 127.0.0.1, loads /metrics with wrk (64 keep-alive connections for 15 s by
# default) and fails on any socket error, on any status but 200 and 503, or when the exporter's
# resident memory or open file descriptors grew between a warm-up run and the end of the soak.
# 503 is the concurrency limit at work: 64 connections can have more than its 40 scrapes in
# progress at once; the count is printed (with 40 connections or fewer there are none).
#
#   scripts/http-soak.sh [path/to/hwperf_exporter [extra exporter flags...]]
#
# Environment: HWPERF_SOAK_PORT (19477), HWPERF_SOAK_CONNECTIONS (64), HWPERF_SOAK_DURATION (15s),
# HWPERF_SOAK_PATH (/metrics). wrk: `apt-get install wrk`.
set -euo pipefail

binary=${1:-build/exporter/hwperf_exporter}
shift || true
port=${HWPERF_SOAK_PORT:-19477}
connections=${HWPERF_SOAK_CONNECTIONS:-64}
duration=${HWPERF_SOAK_DURATION:-15s}
path=${HWPERF_SOAK_PATH:-/metrics}
url="http://127.0.0.1:${port}${path}"

command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk" >&2; exit 2; }
[[ -x $binary ]] || { echo "no exporter binary at $binary (build first, or pass its path)" >&2; exit 2; }

log=$(mktemp)
statuses=$(mktemp --suffix=.lua)
# Counts the responses per status code; wrk itself only counts "non-2xx or 3xx".
cat >"$statuses" <<'LUA'
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) counts = {} end
function response(status, headers, body) counts[status] = (counts[status] or 0) + 1 end
function done(summary, latency, requests)
  local total = {}
  for _, thread in ipairs(threads) do
    for status, count in pairs(thread:get("counts")) do total[status] = (total[status] or 0) + count end
  end
  for status, count in pairs(total) do io.write(string.format("status %d: %d\n", status, count)) end
end
LUA
"$binary" --web.listen-address="127.0.0.1:${port}" "$@" 2>"$log" &
pid=$!
cleanup() {
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  rm -f "$log" "$statuses"
}
trap cleanup EXIT

for _ in $(seq 100); do
  curl -sf -o /dev/null "http://127.0.0.1:${port}/-/healthy" && break
  kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; echo "the exporter exited" >&2; exit 1; }
  sleep 0.1
done

rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status"; }
fds() { ls "/proc/$pid/fd" | wc -l; }
threads() { awk '/^Threads:/ { print $2 }' "/proc/$pid/status"; }

# Warm-up: every worker thread has served, allocator arenas exist; what follows must stay flat.
wrk -t2 -c"$connections" -d5s "$url" >/dev/null
sleep 2  # keep-alive connections time out
rss_before=$(rss_kb) fds_before=$(fds)

out=$(wrk -t2 -c"$connections" -d"$duration" --latency -s "$statuses" "$url")
echo "$out"
sleep 2
rss_after=$(rss_kb) fds_after=$(fds)
echo "exporter: RSS ${rss_before} -> ${rss_after} kB, open fds ${fds_before} -> ${fds_after}, threads $(threads)"

failed=0
if grep -q "Socket errors" <<<"$out"; then
  echo "FAIL: socket errors" >&2
  failed=1
fi
if grep "^status " <<<"$out" | grep -qv "^status \(200\|503\):"; then
  echo "FAIL: statuses other than 200 and 503" >&2
  failed=1
fi
if ((fds_after > fds_before + 2)); then
  echo "FAIL: open descriptors grew from $fds_before to $fds_after" >&2
  failed=1
fi
# Allocator noise aside, memory must not grow with the number of requests served.
if ((rss_after > rss_before + rss_before / 10 + 2048)); then
  echo "FAIL: RSS grew from $rss_before kB to $rss_after kB" >&2
  failed=1
fi
((failed == 0)) && echo "OK"
exit "$failed"
