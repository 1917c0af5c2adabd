"""What the matrix costs: building a release's environment, and a cell against a single run.

1. Environment of one release (`--ray`, default the oldest supported):
   - cold:  an empty ftharness cache and an empty uv/pip cache (the wheels come from the registry);
   - uv-warm: an empty ftharness cache, the installer's cache kept from the cold build;
   - warm:  the environment exists (what every later matrix pays).
2. Overhead per cell: `ftharness run SCENARIO` against `ftharness matrix SCENARIO` (one cell on the
   installed release), alternated `--runs` times; prints the medians and the ratio matrix/run.

    .venv/bin/python benchmarks/matrix_env.py --ray 2.51.2 --runs 2
    .venv/bin/python benchmarks/matrix_env.py --skip-cells      # environments only
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLI = [sys.executable, "-m", "ftharness"]


def timed(cmd, env=None) -> float:
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})})
    if r.returncode != 0:
        sys.exit(f"benchmark: {' '.join(cmd[:5])} exited {r.returncode}: {(r.stderr or r.stdout)[-400:]}")
    return time.monotonic() - t0


def env_figures(version: str) -> None:
    work = tempfile.mkdtemp(prefix="ftharness-bench-env-")
    code = f"from ftharness.harness.matrix.envs import ensure_env; ensure_env({version!r}, lambda m: None)"
    env = {"FTHARNESS_CACHE": os.path.join(work, "cache"), "UV_CACHE_DIR": os.path.join(work, "uv"),
           "PIP_CACHE_DIR": os.path.join(work, "pip")}
    try:
        cold = timed([sys.executable, "-c", code], env)
        shutil.rmtree(env["FTHARNESS_CACHE"])
        uv_warm = timed([sys.executable, "-c", code], env)
        warm = timed([sys.executable, "-c", code], env)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"environment of Ray {version}: cold {cold:.1f} s, installer cache warm {uv_warm:.1f} s, "
          f"built {warm:.1f} s (cold/warm x{cold / warm:.1f})")


def cell_figures(scenario: str, runs: int) -> None:
    run_s, cell_s = [], []
    for i in range(runs):
        with tempfile.TemporaryDirectory(prefix="ftharness-bench-cell-") as d:
            run_s.append(timed(CLI + ["run", scenario, "--out", os.path.join(d, "run"), "--quiet"]))
            cell_s.append(timed(CLI + ["matrix", scenario, "--out", os.path.join(d, "m")]))
        print(f"  pair {i + 1}: run {run_s[-1]:.1f} s, matrix cell {cell_s[-1]:.1f} s")
    r, c = statistics.median(run_s), statistics.median(cell_s)
    print(f"one cell against one run ({os.path.basename(scenario)}, {runs} pair(s)): run {r:.1f} s, "
          f"cell {c:.1f} s, overhead {c - r:+.1f} s per cell (x{c / r:.3f})")


def main() -> None:
    from ftharness import releases

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ray", default=releases.OLDEST)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--scenario", default=os.path.join(ROOT, "scenarios", "catalog", "kill-worker.yaml"))
    ap.add_argument("--skip-cells", action="store_true")
    ap.add_argument("--skip-env", action="store_true")
    a = ap.parse_args()
    if not a.skip_env:
        env_figures(a.ray)
    if not a.skip_cells:
        cell_figures(a.scenario, a.runs)


if __name__ == "__main__":
    main()
