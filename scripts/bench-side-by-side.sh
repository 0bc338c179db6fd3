#!/usr/bin/env bash
# hwperf_exporter and node_exporter side by side on the same 9-zone RAPL powercap fixture tree:
# idle CPU, RSS, and wrk throughput, latency and CPU per scrape, identity and gzip, 1 and 8
# connections, exporters alternated over 3 rounds (medians printed). Loopback only. Each exporter
# is pinned to CPU 0 and wrk to CPU 1, so the exporter's CPU is read from its own schedstat.
# Beside them runs the floor (bench/floor_server.cpp, build/bench/hwperf_floor_server): a
# do-nothing server answering with hwperf's own responses, captured byte for byte, so that
# hwperf's CPU per scrape is also printed as a multiple of what sending those bytes costs; and
# the reading floor (readfloor), the same server reading the energy_uj files hwperf holds open
# with one pread each per request, what any exporter of those counters pays besides the socket.
#
#   scripts/bench-side-by-side.sh            ~7 minutes (5 s per wrk run, 60 s idle)
#   scripts/bench-side-by-side.sh --quick    ~3 minutes (2 s per wrk run, 10 s idle)
#
# conns "1close" is one connection with "Connection: close", a new TCP connection per scrape.
#
# Needs: ./dev.sh build (build/exporter/hwperf_exporter), and the Debian packages
# prometheus-node-exporter and wrk. Runs node_exporter's binary directly, not its service.
set -euo pipefail

cd "$(dirname "$0")/.."
wrk_seconds=5
idle_seconds=60
rounds=3
if [[ "${1:-}" == "--quick" ]]; then
  wrk_seconds=2
  idle_seconds=10
fi

hwperf_bin=${HWPERF_EXPORTER:-build/exporter/hwperf_exporter}
node_bin=${NODE_EXPORTER:-/usr/bin/prometheus-node-exporter}
floor_bin=${HWPERF_FLOOR_SERVER:-build/bench/hwperf_floor_server}
hwperf_port=${HWPERF_PORT:-19477}
node_port=${NODE_PORT:-19100}
floor_port=${FLOOR_PORT:-19480}
readfloor_port=${READFLOOR_PORT:-19481}
for tool in "$hwperf_bin" "$node_bin" "$floor_bin" wrk taskset curl python3; do
  if ! command -v "$tool" >/dev/null; then
    echo "missing $tool (build with ./dev.sh build; apt-get install prometheus-node-exporter wrk)" >&2
    exit 1
  fi
done
if [[ $(nproc) -lt 2 ]]; then
  echo "needs 2 CPUs: exporter on CPU 0, wrk on CPU 1" >&2
  exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/hwperf-side-by-side-XXXXXX")
started_pids=()
cleanup() {
  for pid in "${started_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${started_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# --- The fixture: what both exporters read (bench/rapl_fixture.sh). -------------------------
. bench/rapl_fixture.sh
write_rapl_fixture "$work"
sysfs="$work/sys"

# --- Start both, pinned to CPU 0. -----------------------------------------------------------
taskset -c 0 "$hwperf_bin" --config.file="$work/hwperf.yml" \
  --web.listen-address="127.0.0.1:$hwperf_port" 2>"$work/hwperf.log" &
hwperf_pid=$!
started_pids+=("$hwperf_pid")
# --web.disable-exporter-metrics drops node_exporter's go_*/process_*/promhttp_* series, so both
# serve RAPL plus their own per-collector scrape metrics.
taskset -c 0 "$node_bin" --collector.disable-defaults --collector.rapl --path.sysfs="$sysfs" \
  --web.disable-exporter-metrics --web.listen-address="127.0.0.1:$node_port" 2>"$work/node.log" &
node_pid=$!
started_pids+=("$node_pid")

wait_ready() {  # url pid name
  for _ in $(seq 100); do
    if curl -fsS -o /dev/null "$1" 2>/dev/null; then return 0; fi
    if ! kill -0 "$2" 2>/dev/null; then
      echo "$3 exited at startup:" >&2
      cat "$work/$3.log" >&2
      exit 1
    fi
    sleep 0.1
  done
  echo "$3 did not answer $1" >&2
  exit 1
}
wait_ready "http://127.0.0.1:$hwperf_port/metrics" "$hwperf_pid" hwperf
wait_ready "http://127.0.0.1:$node_port/metrics" "$node_pid" node
# Every counter moves once after startup (move_rapl_counters), or hwperf would serve less than
# node_exporter and the floor once it takes them for frozen.
move_rapl_counters "$work"

# The floor answers with hwperf's responses (status line, headers, body), captured once.
capture_response() {  # port accept-encoding file: the raw response to one GET /metrics
  if [[ "$2" == gzip ]]; then
    python3 bench/keepalive_get.py "$1" --gzip --save "$3"
  else
    python3 bench/keepalive_get.py "$1" --save "$3"
  fi
}
capture_response "$hwperf_port" identity "$work/floor-identity.http"
capture_response "$hwperf_port" gzip "$work/floor-gzip.http"
taskset -c 0 "$floor_bin" "$floor_port" "$work/floor-identity.http" "$work/floor-gzip.http" \
  2>"$work/floor.log" &
floor_pid=$!
started_pids+=("$floor_pid")
wait_ready "http://127.0.0.1:$floor_port/metrics" "$floor_pid" floor
# The counter files hwperf reads on a scrape: those it holds open.
mapfile -t energy_files < <(find /proc/"$hwperf_pid"/fd -lname '*energy_uj' -printf '%l\n' | sort)
[[ ${#energy_files[@]} -gt 0 ]] || { echo "hwperf holds no energy_uj file open" >&2; exit 1; }
taskset -c 0 "$floor_bin" "$readfloor_port" "$work/floor-identity.http" "$work/floor-gzip.http" \
  "${energy_files[@]}" 2>"$work/readfloor.log" &
readfloor_pid=$!
started_pids+=("$readfloor_pid")
wait_ready "http://127.0.0.1:$readfloor_port/metrics" "$readfloor_pid" readfloor

cpu_ns() {  # total ns on CPU of every thread of a process (first field of schedstat)
  # A Go thread can exit between the glob and the read; %.0f because mawk's %d stops at 2^31.
  { cat /proc/"$1"/task/*/schedstat 2>/dev/null || true; } |
    awk '{ total += $1 } END { printf "%.0f\n", total }'
}
rss_mib() {
  awk '/^VmRSS:/ { printf "%.1f", $2 / 1024 }' /proc/"$1"/status
}
url_of() {
  case "$1" in
    hwperf) echo "http://127.0.0.1:$hwperf_port/metrics" ;;
    node) echo "http://127.0.0.1:$node_port/metrics" ;;
    floor) echo "http://127.0.0.1:$floor_port/metrics" ;;
    readfloor) echo "http://127.0.0.1:$readfloor_port/metrics" ;;
  esac
}
pid_of() {
  case "$1" in
    hwperf) echo "$hwperf_pid" ;;
    node) echo "$node_pid" ;;
    floor) echo "$floor_pid" ;;
    readfloor) echo "$readfloor_pid" ;;
  esac
}

echo "== Machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs; $(uname -r)"
echo "== load average at start: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine shows in every figure)"
echo "== $("$hwperf_bin" --version)"
echo "== $("$node_bin" --version 2>&1 | head -1)"
echo
echo "== What each serves on the 9-zone fixture (text format)"
printf '%-8s %8s %10s %10s\n' exporter samples identity_B gzip_B
for exporter in hwperf node; do
  url=$(url_of "$exporter")
  samples=$(curl -fsS "$url" | grep -cv '^#')
  identity=$(curl -fsS "$url" | wc -c)
  gzipped=$(curl -fsS -H 'Accept-Encoding: gzip' "$url" | wc -c)
  printf '%-8s %8s %10s %10s\n' "$exporter" "$samples" "$identity" "$gzipped"
done
hwperf_joules() { curl -fsS "$(url_of hwperf)" | grep -c '^hwperf_rapl_.*joules_total' || true; }
echo "RAPL energy samples: hwperf $(hwperf_joules), node $(curl -fsS "$(url_of node)" | grep -c '^node_rapl_.*joules_total')"

# --- Idle: nobody scrapes for idle_seconds. -------------------------------------------------
echo
echo "== Idle for ${idle_seconds} s after startup (no scrapes): CPU from schedstat, RSS"
hwperf_idle_start=$(cpu_ns "$hwperf_pid")
node_idle_start=$(cpu_ns "$node_pid")
sleep "$idle_seconds"
hwperf_idle_end=$(cpu_ns "$hwperf_pid")
node_idle_end=$(cpu_ns "$node_pid")
# Past the 5 s after which a counter that never moved is taken as frozen.
if [[ $(hwperf_joules) -eq 0 ]]; then
  echo "hwperf serves no joules: it takes the fixture's counters for frozen (see $work/hwperf.log)" >&2
  exit 1
fi
printf '%-8s %16s %14s %9s\n' exporter "ms CPU/minute" "% of a core" "RSS MiB"
for exporter in hwperf node; do
  if [[ "$exporter" == hwperf ]]; then delta=$((hwperf_idle_end - hwperf_idle_start)); else delta=$((node_idle_end - node_idle_start)); fi
  awk -v ns="$delta" -v s="$idle_seconds" -v name="$exporter" -v rss="$(rss_mib "$(pid_of "$exporter")")" \
    'BEGIN { printf "%-8s %16.2f %14.4f %9s\n", name, ns / 1e6 * 60 / s, ns / 1e9 / s * 100, rss }'
done

# --- Load: wrk on CPU 1, exporters alternated. ----------------------------------------------
to_ms() {  # wrk prints 1.23us, 4.56ms, 1.2s
  awk -v v="$1" 'BEGIN {
    if (v ~ /us$/) { sub(/us$/, "", v); printf "%.3f", v / 1000 }
    else if (v ~ /ms$/) { sub(/ms$/, "", v); printf "%.3f", v }
    else if (v ~ /s$/) { sub(/s$/, "", v); printf "%.3f", v * 1000 }
    else printf "%s", v }'
}
results="$work/results.tsv"
: >"$results"
run_wrk() {  # exporter encoding connections round; connections "1close" = 1, not kept alive
  local exporter=$1 encoding=$2 connections=$3 round=$4 pid out before after
  pid=$(pid_of "$exporter")
  out="$work/wrk-$exporter-$encoding-$connections-$round.txt"
  local header=()
  if [[ "$encoding" == gzip ]]; then header+=(-H 'Accept-Encoding: gzip'); fi
  # A fresh connection per request: the server's close flushes the response at once, so this
  # shows the scrape cost without the keep-alive stall (see bench/README.md).
  if [[ "$connections" == 1close ]]; then header+=(-H 'Connection: close'); fi
  before=$(cpu_ns "$pid")
  taskset -c 1 wrk -t1 -c"${connections%close}" -d"${wrk_seconds}s" --latency "${header[@]}" \
    "$(url_of "$exporter")" >"$out"
  after=$(cpu_ns "$pid")
  local requests rps p50 p90 p99 errors
  requests=$(awk '/requests in/ { print $1 }' "$out")
  rps=$(awk '/^Requests\/sec:/ { print $2 }' "$out")
  p50=$(to_ms "$(awk '$1 == "50%" { print $2 }' "$out")")
  p90=$(to_ms "$(awk '$1 == "90%" { print $2 }' "$out")")
  p99=$(to_ms "$(awk '$1 == "99%" { print $2 }' "$out")")
  errors=$(awk '/Non-2xx|Socket errors/ { print }' "$out" | tr '\n' ' ')
  # With "Connection: close", wrk counts one read error per request against CivetWeb (not
  # against node_exporter) after the whole response has arrived (bytes read = requests x
  # response size), so the requests are complete; only other errors are worth a line.
  if [[ "$connections" == 1close && "$errors" =~ ^\ *Socket\ errors:\ connect\ 0,\ read\ [0-9]+,\ write\ 0,\ timeout\ 0\ *$ ]]; then
    errors=""
  fi
  local cpu_us=0
  requests=${requests:-0}
  if [[ "$requests" -gt 0 ]]; then
    cpu_us=$(awk -v ns=$((after - before)) -v n="$requests" 'BEGIN { printf "%.1f", ns / n / 1000 }')
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$exporter" "$encoding" "$connections" \
    "$round" "$rps" "$p50" "$p90" "$p99" "$cpu_us" >>"$results"
  if [[ -n "$errors" ]]; then echo "  $exporter $encoding c=$connections round $round: $errors" >&2; fi
}

echo
echo "== wrk: ${wrk_seconds} s per run, ${rounds} rounds, exporters alternated (each round flips the order)"
for round in $(seq "$rounds"); do
  if ((round % 2)); then order=(hwperf node floor readfloor); else order=(readfloor floor node hwperf); fi
  for encoding in identity gzip; do
    for connections in 1 8 1close; do
      for exporter in "${order[@]}"; do
        run_wrk "$exporter" "$encoding" "$connections" "$round"
      done
    done
  done
  echo "  round $round done"
done

echo
echo "== Medians over ${rounds} rounds (latency in ms; CPU = exporter's CPU time / requests served)"
printf '%-9s %-8s %6s %10s %9s %9s %9s %13s\n' exporter encoding conns "req/s" p50 p90 p99 "CPU/scrape us"
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
column_median() {  # exporter encoding connections column
  awk -F'\t' -v e="$1" -v enc="$2" -v c="$3" -v col="$4" '$1 == e && $2 == enc && $3 == c { print $col }' "$results" | median
}
for encoding in identity gzip; do
  for connections in 1 8 1close; do
    for exporter in hwperf node floor readfloor; do
      printf '%-9s %-8s %6s %10s %9s %9s %9s %13s\n' "$exporter" "$encoding" "$connections" \
        "$(column_median "$exporter" "$encoding" "$connections" 5)" \
        "$(column_median "$exporter" "$encoding" "$connections" 6)" \
        "$(column_median "$exporter" "$encoding" "$connections" 7)" \
        "$(column_median "$exporter" "$encoding" "$connections" 8)" \
        "$(column_median "$exporter" "$encoding" "$connections" 9)"
    done
  done
done

echo
echo "== Ratios node/hwperf (medians): >1 means node_exporter needs more (or serves more, for req/s)"
printf '%-8s %6s %10s %9s %13s\n' encoding conns "req/s" p99 "CPU/scrape"
for encoding in identity gzip; do
  for connections in 1 8 1close; do
    awk -v a="$(column_median node "$encoding" "$connections" 5)" -v b="$(column_median hwperf "$encoding" "$connections" 5)" \
        -v c="$(column_median node "$encoding" "$connections" 8)" -v d="$(column_median hwperf "$encoding" "$connections" 8)" \
        -v e="$(column_median node "$encoding" "$connections" 9)" -v f="$(column_median hwperf "$encoding" "$connections" 9)" \
        -v enc="$encoding" -v conns="$connections" \
        'function r(x, y) { return y > 0 ? sprintf("%.2f", x / y) : "n/a" }
         BEGIN { printf "%-8s %6s %10s %9s %13s\n", enc, conns, r(a, b), r(c, d), r(e, f) }'
  done
done

echo
echo "== hwperf's CPU per scrape as a multiple of the floor's (the same bytes from a do-nothing server)"
echo "   and of the reading floor's (the same, plus one pread of each energy_uj file hwperf reads: ${#energy_files[@]})"
printf '%-8s %6s %13s %17s\n' encoding conns "hwperf/floor" "hwperf/readfloor"
for encoding in identity gzip; do
  for connections in 1 8 1close; do
    awk -v h="$(column_median hwperf "$encoding" "$connections" 9)" \
        -v f="$(column_median floor "$encoding" "$connections" 9)" \
        -v r="$(column_median readfloor "$encoding" "$connections" 9)" -v enc="$encoding" \
        -v conns="$connections" \
        'function ratio(x, y) { return y > 0 ? sprintf("%.2f", x / y) : "n/a" }
         BEGIN { printf "%-8s %6s %13s %17s\n", enc, conns, ratio(h, f), ratio(h, r) }'
  done
done

echo
echo "== load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== RSS after the load (MiB): hwperf $(rss_mib "$hwperf_pid"), node $(rss_mib "$node_pid")"
echo "== Raw per-run figures: exporter encoding conns round req/s p50 p90 p99 CPU/scrape_us"
sort "$results"
