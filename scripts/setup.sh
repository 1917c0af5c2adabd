#!/usr/bin/env bash
# Creates .venv in the repository and installs ftharness into it.
# torch==2.13.0 is installed first where .venv has no torch. Which build pip
# picks depends on where it looks: from PyPI on Linux x86_64 it is the CUDA
# build (several GB); a CPU wheel wins where pip's config points at one (a
# local find-links folder). TORCH_INDEX chooses explicitly, e.g.
#   TORCH_INDEX=https://download.pytorch.org/whl/cpu   ./scripts/setup.sh   # CPU
#   TORCH_INDEX=https://download.pytorch.org/whl/cuXYZ ./scripts/setup.sh   # a CUDA build listed on pytorch.org
# A torch already in .venv is kept. The build installed is printed at the end.
# Ray: the newest supported release (2.60) unless RAY_VERSION chooses one of
# 2.51 to 2.60, e.g. RAY_VERSION=2.55.1 ./scripts/setup.sh (`ftharness matrix`
# runs other releases in environments of their own, without touching .venv).
# A second run is a no-op unless pyproject.toml or this script changed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-$(command -v python3.11 || command -v python3)}"
[ -x .venv/bin/python ] || "$PY" -m venv .venv
stamp=.venv/.ftharness-setup
want="$( (cat pyproject.toml setup.py history/_linescan.c scripts/setup.sh; echo "${RAY_VERSION:-}") | sha256sum | cut -c1-16)"
if [ "$(cat "$stamp" 2>/dev/null)" = "$want" ] && .venv/bin/python -c "import ftharness, torch, ray" 2>/dev/null; then
  exit 0
fi
quiet() { grep -v -e "is ignored: it is neither a file nor a directory" -e "^\s*$" || true; }
.venv/bin/python -m pip install -q --upgrade pip 2>&1 | quiet
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  if [ -n "${TORCH_INDEX:-}" ]; then
    echo "setup: installing torch==2.13.0 from $TORCH_INDEX"
    .venv/bin/python -m pip install -q "torch==2.13.0" --index-url "$TORCH_INDEX" 2>&1 | quiet
  else
    echo "setup: installing torch==2.13.0 (the build pip finds; TORCH_INDEX=... chooses one)"
    .venv/bin/python -m pip install -q "torch==2.13.0" 2>&1 | quiet
  fi
fi
echo "setup: installing ftharness and its dependencies into .venv"
ray_pin=()
[ -n "${RAY_VERSION:-}" ] && ray_pin=("ray[default,train]==${RAY_VERSION}")
.venv/bin/python -m pip install -q -e ".[test,frameworks,s3,matrix,docs]" "${ray_pin[@]}" 2>&1 | quiet
.venv/bin/python -c "import ftharness, torch, ray
print('setup: torch', torch.__version__, '(CUDA ' + torch.version.cuda + ')' if torch.version.cuda else '(CPU build)')"
echo "$want" > "$stamp"
