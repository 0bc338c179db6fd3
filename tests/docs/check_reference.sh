#!/usr/bin/env bash
# docs/reference.md must be what the exporter generates from its flag table and its readers, so
# a flag or key added without regenerating fails here.
#   check_reference.sh SOURCE_DIR EXPORTER_BINARY
set -uo pipefail
source_dir=$1
exporter=$2
generated=$(mktemp)
trap 'rm -f "$generated"' EXIT
if ! "$exporter" --print-reference >"$generated"; then
  echo "FAIL: $exporter --print-reference failed (its log above names the key)"
  exit 1
fi
if ! diff -u "$source_dir/docs/reference.md" "$generated"; then
  echo "FAIL: docs/reference.md differs from what the exporter generates (diff above: - checked in, + generated)."
  echo "Regenerate it from the source directory with:"
  echo "  $exporter --print-reference > docs/reference.md"
  exit 1
fi
echo "docs/reference.md matches --print-reference ($(wc -l <"$generated") lines)"
