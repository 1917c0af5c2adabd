#!/usr/bin/env bash
# Creates .venv in the repository and installs ftharness into it, with the extras asked:
#   EXTRAS=test,ctk ./scripts/setup.sh     # `make demo` asks none, `make test` the ones its tests use
# The installer is uv where it is on PATH or installable into .venv (it is on PyPI), else pip.
# With CI=true the versions come from requirements/ci.lock (every dependency and extra `make test`
# uses, pinned; regenerate with `make lock`), so CI does not get another Ray or pandas each week.
#
# torch==2.13.0 is installed first where .venv has no torch, always by pip (it honours pip's
# config: a local find-links folder with a CPU wheel). Which build pip picks depends on where
# it looks: from PyPI on Linux x86_64 it is the CUDA build (several GB). TORCH_INDEX chooses, e.g.
#   TORCH_INDEX=https://download.pytorch.org/whl/cpu   ./scripts/setup.sh   # CPU
#   TORCH_INDEX=https://download.pytorch.org/whl/cuXYZ ./scripts/setup.sh   # a CUDA build listed on pytorch.org
# A torch already in .venv is kept. The build installed is printed at the end.
# Ray: the newest supported release (2.60) unless RAY_VERSION chooses one of 2.51 to 2.60, e.g.
# RAY_VERSION=2.55.1 ./scripts/setup.sh (`ftharness matrix` runs other releases in environments
# of their own, without touching .venv).
# A second run is a no-op unless pyproject.toml, the lock, this script or the extras changed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-$(command -v python3.11 || command -v python3)}"
EXTRAS="${EXTRAS-}"
LOCK=requirements/ci.lock
[ -x .venv/bin/python ] || "$PY" -m venv .venv
stamp=".venv/.ftharness-setup-${EXTRAS:-none}"   # one per set of extras: demo and test do not undo each other
want="$( (cat pyproject.toml setup.py history/_linescan.c scripts/setup.sh "$LOCK"; echo "${RAY_VERSION:-} ${CI:-} $EXTRAS") | sha256sum | cut -c1-16)"
if [ "$(cat "$stamp" 2>/dev/null)" = "$want" ] && .venv/bin/python -c "import ftharness, torch, ray" 2>/dev/null; then
  exit 0
fi
quiet() { grep -v -e "is ignored: it is neither a file nor a directory" -e "^\s*$" || true; }

# the installer: uv (PATH, or installed into .venv), else pip
UV="$(command -v uv || true)"
if [ -z "$UV" ] && [ "${FTHARNESS_NO_UV:-}" != "1" ]; then
  .venv/bin/python -m pip install -q uv 2>&1 | quiet || true
  [ -x .venv/bin/uv ] && UV=.venv/bin/uv
fi
[ "${FTHARNESS_NO_UV:-}" = "1" ] && UV=""
INSTALLER="pip"
[ -n "$UV" ] && INSTALLER="uv ($UV)"
install() {
  # --compile-bytecode: uv writes no .pyc by default, and Ray starts its workers so that they write
  # none either: each worker process then compiled Ray's sources again (measured: every real test
  # 2.5x slower from a clean clone than from a venv pip had installed)
  if [ -n "$UV" ]; then "$UV" pip install -q --compile-bytecode --python .venv/bin/python "$@"
  else .venv/bin/python -m pip install -q "$@" 2>&1 | quiet; fi
}

if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  if [ -n "${TORCH_INDEX:-}" ]; then
    echo "setup: installing torch==2.13.0 from $TORCH_INDEX"
    .venv/bin/python -m pip install -q "torch==2.13.0" --index-url "$TORCH_INDEX" 2>&1 | quiet
  else
    echo "setup: installing torch==2.13.0 (the build pip finds; TORCH_INDEX=... chooses one)"
    .venv/bin/python -m pip install -q "torch==2.13.0" 2>&1 | quiet
  fi
fi
target="."
[ -n "$EXTRAS" ] && target=".[$EXTRAS]"
ray_pin=()
[ -n "${RAY_VERSION:-}" ] && ray_pin=("ray[default,train]==${RAY_VERSION}")
if [ "${CI:-}" = "true" ] && [ -z "${RAY_VERSION:-}" ]; then
  echo "setup: installing the locked versions of $LOCK with $INSTALLER, then ftharness ($target)"
  install -r "$LOCK"
  install --no-deps -e "$target"
else
  echo "setup: installing ftharness ($target) and its dependencies into .venv with $INSTALLER"
  install -e "$target" "${ray_pin[@]}"
fi
.venv/bin/python -c "import ftharness, torch, ray
print('setup: torch', torch.__version__, '(CUDA ' + torch.version.cuda + ')' if torch.version.cuda else '(CPU build)')"
echo "$want" > "$stamp"
