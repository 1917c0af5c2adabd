#!/usr/bin/env bash
# Creates .venv in the repository and installs ftharness into it.
# torch==2.13.0 is installed explicitly first where no torch is present: a bare
# `torch` requirement would pull a multi-GB CUDA build. A second run is a no-op
# unless pyproject.toml or this script changed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-$(command -v python3.11 || command -v python3)}"
[ -x .venv/bin/python ] || "$PY" -m venv .venv
stamp=.venv/.ftharness-setup
want="$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)"
if [ "$(cat "$stamp" 2>/dev/null)" = "$want" ] && .venv/bin/python -c "import harness, torch, ray" 2>/dev/null; then
  exit 0
fi
quiet() { grep -v -e "is ignored: it is neither a file nor a directory" -e "^\s*$" || true; }
.venv/bin/python -m pip install -q --upgrade pip 2>&1 | quiet
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  echo "setup: installing torch==2.13.0 (CPU build)"
  .venv/bin/python -m pip install -q "torch==2.13.0" 2>&1 | quiet
fi
echo "setup: installing ftharness and its dependencies into .venv"
.venv/bin/python -m pip install -q -e ".[test]" 2>&1 | quiet
.venv/bin/python -c "import harness, torch, ray" 
echo "$want" > "$stamp"
