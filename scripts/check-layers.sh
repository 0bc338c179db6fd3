#!/usr/bin/env bash
# Fails when an #include crosses the layers upward (docs/development.md, Layout):
#   common <- config, topology <- collectors/<name>/ <- collectors/ (registry, collector_set)
#   <- exporter/, with web/ beside the collectors. A collector's folder never includes the
#   registry or the collector set, nor exporter/ or web/; exporter/, web/, config/, common/ and
#   topology/ never name a collector's folder (they reach collectors through the registry).
set -euo pipefail
cd "$(dirname "$0")/.."
found=0
report() {
  echo "check-layers: $1" >&2
  found=1
}
while IFS= read -r hit; do report "$hit (a collector includes a layer above it)"; done < <(
  grep -rnE '#include "(collectors/(registry|collector_set)\.h|exporter/|web/)' collectors/*/ || true)
while IFS= read -r hit; do report "$hit (names a collector's folder)"; done < <(
  grep -rnE '#include "collectors/[a-z_]+/' exporter web config common topology || true)
while IFS= read -r hit; do report "$hit (a lower layer includes a higher one)"; done < <(
  grep -rnE '#include "(collectors|exporter|web)/' config common topology || true)
[ "$found" -eq 0 ] || exit 1
echo "check-layers: no include crosses the layers upward"
