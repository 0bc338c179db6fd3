#!/usr/bin/env bash
# scripts/check-layers.sh must fail on an include that points up, one of each rule: copies of the
# code folders, each with one planted include, must be refused naming the planted line, and the
# unplanted copy must pass. Among them the holes the check once had: web/ including exporter/, a
# relative include from one collector's folder into another's, and markers/ including more than
# libc and its own headers.
set -euo pipefail
source_dir=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/scripts"
cp -r "$source_dir"/{collectors,exporter,web,config,common,topology,markers} "$work/"
cp "$source_dir/scripts/check-layers.sh" "$work/scripts/"
bash "$work/scripts/check-layers.sh" >/dev/null
planted=(
  'collectors/perf/pmu_sysfs.cpp|#include "collectors/papi/papi_library.h"'
  'collectors/events/emission.cpp|#include "collectors/perf/perf_event.h"'
  'collectors/metrics.cpp|#include "collectors/collector.h"'
  'collectors/process/proc_scan.cpp|#include "collectors/cgroup/identity.h"'
  'collectors/region/segment_source.cpp|#include "collectors/process/proc_scan.h"'
  'collectors/rapl/energy.cpp|#include "collectors/registry.h"'
  'exporter/cli.cpp|#include "collectors/papi/papi_factory.h"'
  'common/text.cpp|#include "collectors/metrics.h"'
  'web/query.cpp|#include "exporter/router.h"'
  'web/admission.cpp|#include "collectors/collector_set.h"'
  'collectors/process/proc_scan.cpp|#include "../cgroup/identity.h"'
  'collectors/events/emission.cpp|#include "../perf/perf_event.h"'
  'collectors/perf/bpf/cgroup_engine.cpp|#include "collectors/cgroup/identity.h"'
  'collectors/perf/bpf/subtree_totals.cpp|#include "../../cgroup/identity.h"'
  'collectors/perf/bpf/map_values.cpp|#include "collectors/registry.h"'
  'markers/src/segment.c|#include "common/text.h"'
  'markers/src/segment.c|#include "../../common/unique_fd.h"'
  'markers/src/markers.c|#include <papi.h>'
  'exporter/compression/gzip.cpp|#include "exporter/router.h"'
  'exporter/topology_page/topology_json.cpp|#include "exporter/experiment/experiment.h"'
  'exporter/experiment/experiment_report.cpp|#include "exporter/cli.h"'
)
failures=0
for plant in "${planted[@]}"; do
  file=${plant%%|*}
  line=${plant#*|}
  cp "$work/$file" "$work/$file.orig"
  sed -i "1a $line" "$work/$file"
  if output=$(bash "$work/scripts/check-layers.sh" 2>&1); then
    echo "FAIL: $file with $line passed the layer check" >&2
    failures=$((failures + 1))
  elif ! grep -qF "$file:2:$line" <<<"$output"; then
    echo "FAIL: the layer check refused $file but did not name the planted line: $output" >&2
    failures=$((failures + 1))
  fi
  mv "$work/$file.orig" "$work/$file"
done
[ "$failures" -eq 0 ] || exit 1
echo "check_layers_planted: ${#planted[@]} planted upward includes refused, the clean tree passes"
