#!/usr/bin/env bash
# ftharness on real NVIDIA GPUs, in one command (issue 26; docs/gpu.md):
#   ./scripts/gpu-check.sh
# 1. No GPU (nvidia-smi lists none): says so in one line and exits 0.
# 2. A Python with a CUDA build of torch and ftharness's dependencies: $PYTHON if it has them,
#    else .venv-gpu, created here: torch==2.13.0 from $TORCH_INDEX (e.g.
#    https://download.pytorch.org/whl/cu128), or pip's default (PyPI on Linux x86_64 is a CUDA
#    build), then the dependencies in pyproject.toml. ftharness itself is not installed: it is
#    imported from this checkout (a link folder on PYTHONPATH).
# 3. The catalog's GPU scenarios (scenarios/catalog/gpu-*.yaml: fault-free, kill_worker,
#    kill_node, cuda_error, collective_hang), fitted to the GPUs here: with 2 or more, two
#    workers of one GPU each on two nodes; with one GPU, one worker on one node, and
#    collective_hang (which needs two ranks; NCCL refuses two ranks on one GPU) on gloo, said so.
#    They run as one `ftharness suite`; then each run's verdict, fault evidence, recovery parts,
#    process-group (NCCL) set-up times, GPU memory and zombie-GPU-memory finding are printed.
# Everything goes to $OUT/gpu-check.log too (OUT: results/gpu-check-<time> by default).
# Budget: under ten minutes (GPU_CHECK_SUITE_S caps the suite, 420 s by default).
# GPU_CHECK_DRY_RUN=1: fit and validate the scenarios and print the plan; install and run nothing.
set -uo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"

gpus="$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)"
if [ "${gpus:-0}" -lt 1 ]; then
  echo "gpu-check: no NVIDIA GPU on this machine (nvidia-smi lists none); nothing to check"
  exit 0
fi

OUT="${OUT:-$REPO/results/gpu-check-$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
exec > >(tee -a "$OUT/gpu-check.log") 2>&1
t0=$(date +%s)
say() { echo "gpu-check [$(( $(date +%s) - t0 ))s]: $*"; }
say "$gpus GPU(s): $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | paste -sd';')"

# -- a Python with CUDA torch and the dependencies
need='import torch, ray, pandas, pyarrow, yaml, pydantic, rich, matplotlib, jinja2, hypothesis; assert torch.version.cuda'
PY="${PYTHON:-}"
if [ -z "$PY" ] || ! "$PY" -c "$need" 2>/dev/null; then
  PY="$REPO/.venv-gpu/bin/python"
fi
if [ "${GPU_CHECK_DRY_RUN:-}" = "1" ]; then
  PY="${PYTHON:-python3}"
elif ! "$PY" -c "$need" 2>/dev/null; then
  [ -x "$PY" ] || "$(command -v python3.11 || command -v python3)" -m venv "$REPO/.venv-gpu" || exit 4
  "$PY" -m pip install -q --upgrade pip
  if ! "$PY" -c 'import torch; assert torch.version.cuda' 2>/dev/null; then
    say "installing torch==2.13.0 (CUDA build) from ${TORCH_INDEX:-the default pip index}"
    "$PY" -m pip install -q "torch==2.13.0" ${TORCH_INDEX:+--index-url "$TORCH_INDEX"} || exit 4
  fi
  say "installing ftharness's dependencies (pyproject.toml)"
  deps="$("$PY" -c 'import tomllib,sys; print("\n".join(tomllib.load(open(sys.argv[1],"rb"))["project"]["dependencies"]))' "$REPO/pyproject.toml")"
  mapfile -t deps_list <<< "$deps"
  "$PY" -m pip install -q "${deps_list[@]}" || exit 4
fi

# -- ftharness from this checkout, under its one import root
shim="$OUT/.shim"; rm -rf "$shim"; mkdir -p "$shim/ftharness"
for f in "$REPO"/ftharness/*; do ln -s "$f" "$shim/ftharness/$(basename "$f")"; done
for d in history faults scenarios harness reports; do ln -s "$REPO/$d" "$shim/ftharness/$d"; done
export PYTHONPATH="$shim${PYTHONPATH:+:$PYTHONPATH}"
cd "$OUT"   # Ray puts the driver's folder on its workers' path: not the checkout's own ftharness/
if [ "${GPU_CHECK_DRY_RUN:-}" != "1" ]; then
  "$PY" -P -c 'import torch; v = torch.cuda.nccl.version(); v = ".".join(map(str, v)) if isinstance(v, tuple) else v
print("gpu-check: torch", torch.__version__, "CUDA", torch.version.cuda, "devices", torch.cuda.device_count(), "NCCL", v)
assert torch.cuda.is_available(), "torch sees no CUDA device"' || exit 4
fi

# -- the GPU scenarios, fitted to this machine
"$PY" -P - "$REPO/scenarios/catalog" "$OUT/scenarios" "$gpus" <<'EOF' || exit 2
import glob, os, sys, yaml
src, dst, gpus = sys.argv[1], sys.argv[2], int(sys.argv[3])
os.makedirs(dst, exist_ok=True)
for path in sorted(glob.glob(os.path.join(src, "gpu-*.yaml"))):
    sc = yaml.safe_load(open(path))
    c, w = sc.setdefault("cluster", {}), sc.setdefault("workload", {})
    note = ""
    if gpus < 2:
        hang = any(f.get("kind") == "collective_hang" for f in sc.get("faults", []))
        if hang:   # two ranks, and NCCL will not put two on one GPU: gloo on CPU
            c.update(gpus_per_node=0)
            w.update(use_gpu=False)
            sc["name"] += "-gloo"
            note = " (collective_hang needs 2 ranks and NCCL 2 GPUs; this machine has 1: on gloo, CPU)"
        else:
            c.update(nodes=1)
            w.update(num_workers=1)
            for f in sc.get("faults", []):
                if (f.get("target") or {}).get("rank") is not None:
                    f["target"]["rank"] = 0
            note = " (one GPU: one worker)"
    out = os.path.join(dst, sc["name"] + ".yaml")
    yaml.safe_dump(sc, open(out, "w"), sort_keys=False)
    print(f"gpu-check: scenario {sc['name']}{note}")
EOF
"$PY" -P -m ftharness.harness.frontends.cli validate "$OUT"/scenarios/*.yaml || exit 2
if [ "${GPU_CHECK_DRY_RUN:-}" = "1" ]; then
  echo "gpu-check: dry run: would run: $PY -P -m ftharness.harness.frontends.cli suite $OUT/scenarios --out $OUT/runs"
  exit 0
fi

say "running the suite (at most ${GPU_CHECK_SUITE_S:-420} s)"
timeout -k 20 "${GPU_CHECK_SUITE_S:-420}" "$PY" -P -m ftharness.harness.frontends.cli suite "$OUT/scenarios" \
  --out "$OUT/runs" --quiet
rc=$?
say "suite exit $rc"
echo "================ verdicts, recoveries, process groups, GPU memory"
for d in "$OUT"/runs/*/; do
  [ -f "$d/summary.json" ] && "$PY" -P -m ftharness.reports.gpu "$d"
done
nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader 2>/dev/null | sed 's/^/gpu-check: still on a GPU after the suite: /'
say "done; log: $OUT/gpu-check.log"
exit $rc
