#!/usr/bin/env bash
# Fails when a C or C++ file differs from what clang-format makes of it (.clang-format).
# Fix with: git ls-files '*.cpp' '*.h' '*.hpp' '*.c' | xargs clang-format -i
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang-format >/dev/null; then
  . scripts/apt.sh
  apt_install clang-format
fi
git ls-files '*.cpp' '*.h' '*.hpp' '*.c' | xargs clang-format --dry-run -Werror
echo "format-check: $(git ls-files '*.cpp' '*.h' '*.hpp' '*.c' | wc -l) files match .clang-format"
