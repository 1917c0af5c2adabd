#!/bin/bash
# Regenerate the report screenshots in docs/images/ from histories recorded in tests/data (no cluster):
# a PASS (a spot reclaim, its preemption notice drawn) and a job that cannot train (broken config).
#   scripts/screenshots.sh      # needs Chromium (scripts/setup-system.sh installs it)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
for pair in "pass:tests/data/preempt-node" "broken-job:tests/data/broken-job/run"; do
  name=${pair%%:*}; src=${pair#*:}
  "$ROOT/.venv/bin/ftharness" report "$ROOT/$src" --out "$TMP/$name" >/dev/null
  timeout 120 chromium --headless=new --no-sandbox --disable-gpu --hide-scrollbars --window-size=1280,1100 \
    --screenshot="$ROOT/docs/images/report-$name.png" "file://$TMP/$name/index.html" 2>/dev/null
  echo "docs/images/report-$name.png"
done
