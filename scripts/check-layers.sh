#!/usr/bin/env bash
# Fails when an #include crosses the layers upward (docs/development.md, Layout):
#   common <- config, topology <- collectors/events (with collectors/metrics.h, exposition_text.h
#   and prepared_family.h)
#   <- collectors/perf <- collectors/region <- collectors/<name>/ <- collectors/ (registry, collector_set)
#   <- exporter/, with web/ beside the collectors.
# The events layer includes no other collector folder; perf/ includes only events/; region/ (the
# marker library's segments, which process targets export) only events/ and perf/; a
# collector's folder includes events/, perf/ and the Collector interface, never another
# collector's folder, the registry or the collector set, nor exporter/ or web/; exporter/, web/,
# config/, common/ and topology/ never name a collector's folder (they reach collectors through
# the registry).
set -euo pipefail
cd "$(dirname "$0")/.."
found=0
report() {
  echo "check-layers: $1" >&2
  found=1
}
includes() {  # includes DIR: every '#include "collectors/..."' line below DIR, as grep -n prints it
  grep -rnE '#include "collectors/' "$@" || true
}
while IFS= read -r hit; do report "$hit (a collector includes a layer above it)"; done < <(
  grep -rnE '#include "collectors/(registry|collector_set)\.h' collectors/*/ || true)
while IFS= read -r hit; do report "$hit (collectors/ includes the exporter or the server)"; done < <(
  grep -rnE '#include "(exporter|web)/' collectors || true)
while IFS= read -r hit; do report "$hit (the events layer includes a layer above it)"; done < <(
  includes collectors/events collectors/metrics.* collectors/exposition_text.* \
    collectors/prepared_family.* |
    grep -vE '#include "collectors/(events/|(metrics|exposition_text|prepared_family)\.h")' || true)
while IFS= read -r hit; do report "$hit (perf/ includes a collector's folder)"; done < <(
  includes collectors/perf |
    grep -vE '#include "collectors/(events|perf)/|#include "collectors/(metrics|exposition_text|prepared_family)\.h"' ||
    true)
while IFS= read -r hit; do report "$hit (region/ includes a collector's folder)"; done < <(
  includes collectors/region |
    grep -vE '#include "collectors/(events|perf|region)/|#include "collectors/(metrics|exposition_text|prepared_family)\.h"' ||
    true)
for folder in collectors/*/; do
  name=$(basename "$folder")
  case "$name" in events | perf | region) continue ;; esac
  while IFS= read -r hit; do report "$hit (includes another collector's folder)"; done < <(
    includes "$folder" |
      grep -vE "#include \"collectors/(${name}|events|perf|region)/|#include \"collectors/(metrics|exposition_text|prepared_family|collector|collector_entry)\\.h\"" ||
      true)
done
while IFS= read -r hit; do report "$hit (names a collector's folder)"; done < <(
  grep -rnE '#include "collectors/[a-z_]+/' exporter web config common topology || true)
while IFS= read -r hit; do report "$hit (a lower layer includes a higher one)"; done < <(
  grep -rnE '#include "(collectors|exporter|web)/' config common topology || true)
[ "$found" -eq 0 ] || exit 1
echo "check-layers: no include crosses the layers upward"
