"""Record the judge's controls: real, correct runs of every job shape users bring
(tests/data/controls/<shape>-<fault>-<ray>/), each judged again by tests/test_controls.py
with the verdict it must get.

    python -P scripts/record_controls.py                       # every control on the installed release
    python -P scripts/record_controls.py --ray 2.51.1 dcp-kill-worker xgboost-kill-worker
    python -P scripts/record_controls.py --list

One run at a time, each under the host's Ray lock (`flock /tmp/ftharness-ray.lock`, the lock the
other chaos runs on this host take): on the installed release `ftharness run SCENARIO`; on another
release `ftharness matrix SCENARIO --ray V` (its cached environment, built with uv on first use
under $FTHARNESS_CACHE; the job's framework must be installed there too), so the run is judged by
that release's own policy, as a matrix cell is. From the results folder only `history.jsonl`,
`scenario.yaml` and `summary.json` are kept (no storage, logs or report), with the job's modules
(the entrypoint's, the datasets' and the dataset config's) copied beside them so the folder's
scenario validates on its own. The control is then judged again (`ftharness check`) and one line
says its verdict and wall time; a control that does not PASS (but the one meant to FAIL) is named
on stderr and kept for reading, never silently replaced.

tests/data/controls/SOURCES.txt lists every control folder, one a line (relative to the
repository), for tools that take recorded histories as their sources (the mutation engine)."""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import time
from typing import Dict, List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONTROLS = os.path.join(ROOT, "tests", "data", "controls")
LOCK = "/tmp/ftharness-ray.lock"
KEPT = ("history.jsonl", "scenario.yaml", "summary.json")

#: name: (job shape, fault, scenario file relative to the repository, the verdict it must get)
SCENARIOS: Dict[str, Tuple[str, str, str, str]] = {
    "reference-kill-worker": ("reference", "kill_worker", "scenarios/catalog/kill-worker.yaml", "PASS"),
    "reference-preempt-node": ("reference", "preempt_node", "scenarios/catalog/preempt-node.yaml", "PASS"),
    "lightning-kill-worker": ("lightning", "kill_worker", "examples/lightning-kill-worker.yaml", "PASS"),
    "lightning-preempt-node": ("lightning", "preempt_node", "examples/lightning-preempt-node.yaml", "PASS"),
    "transformers-kill-worker": ("transformers", "kill_worker", "examples/transformers-kill-worker.yaml", "PASS"),
    "xgboost-kill-worker": ("xgboost", "kill_worker", "examples/xgboost-kill-worker.yaml", "PASS"),
    "xgboost-preempt-node": ("xgboost", "preempt_node", "examples/xgboost-preempt-node.yaml", "PASS"),
    "lightgbm-kill-worker": ("lightgbm", "kill_worker", "examples/lightgbm-kill-worker.yaml", "PASS"),
    "torch-data-kill-worker": ("torch-data", "kill_worker", "examples/torch-data-kill-worker.yaml", "PASS"),
    "elastic-kill-node": ("elastic", "kill_node", "examples/elastic-kill-node.yaml", "PASS"),
    "dcp-kill-worker": ("dcp", "kill_worker", "examples/dcp-kill-worker.yaml", "PASS"),
    "rank0-checkpoint-kill-worker": ("rank0-checkpoint", "kill_worker",
                                     "examples/rank0-checkpoint-kill-worker.yaml", "PASS"),
    "unreported-checkpoint": ("unreported-checkpoint", "kill_worker", "examples/unreported-checkpoint.yaml", "FAIL"),
}


def installed_ray() -> str:
    import importlib.metadata as md

    return md.version("ray")


def folder_name(name: str, ray: str) -> str:
    shape, fault, _, _ = SCENARIOS[name]
    return f"{shape}-{fault.replace('_', '-')}-{ray}"


def job_modules(scenario_file: str) -> List[str]:
    """The files of the modules the scenario's workload names (entrypoint, datasets, dataset_config)
    found in the scenario's folder."""
    import yaml

    with open(scenario_file) as f:
        workload = (yaml.safe_load(f) or {}).get("workload") or {}
    out = []
    for key in ("entrypoint", "datasets", "dataset_config"):
        ref = workload.get(key)
        if isinstance(ref, str) and ":" in ref:
            path = os.path.join(os.path.dirname(os.path.abspath(scenario_file)), ref.split(":")[0] + ".py")
            if os.path.isfile(path) and path not in out:
                out.append(path)
    return out


def run_one(name: str, ray: str, runs: str, python: str, lock: str = LOCK) -> Tuple[Optional[str], float, int]:
    """Run the scenario `name` on `ray` under the host lock `lock` (none when empty: the caller
    holds it); (its results folder or None, wall s, rc)."""
    scenario = os.path.join(ROOT, SCENARIOS[name][2])
    out = os.path.join(runs, f"{name}-{ray}")
    shutil.rmtree(out, ignore_errors=True)
    if ray == installed_ray():
        cmd = [python, "-P", "-m", "ftharness", "run", scenario, "--out", out, "--quiet"]
    else:
        cmd = [python, "-P", "-m", "ftharness", "matrix", scenario, "--ray", ray, "--out", out]
    if lock:
        cmd = ["flock", lock] + cmd
    t0 = time.monotonic()
    with open(out + ".log", "w") as log:
        rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT).returncode
    wall = time.monotonic() - t0
    if ray != installed_ray():
        found = sorted(glob.glob(os.path.join(out, "cells", "*", "run", "summary.json")))
        return (os.path.dirname(found[-1]) if found else None), wall, rc
    return (out if os.path.isfile(os.path.join(out, "summary.json")) else None), wall, rc


def existing(name: str, ray: str, runs: str) -> Optional[str]:
    """The results folder an earlier run left in `runs` (a single run's, or a matrix cell's)."""
    out = os.path.join(runs, f"{name}-{ray}")
    found = sorted(glob.glob(os.path.join(out, "summary.json")) +
                   glob.glob(os.path.join(out, "cells", "*", "run", "summary.json")))
    return os.path.dirname(found[-1]) if found else None


def keep(name: str, results: str, ray: str) -> str:
    """Copy the kept files of `results` (and the job's modules) into the control folder."""
    dest = os.path.join(CONTROLS, folder_name(name, ray))
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(dest)
    for f in KEPT:
        shutil.copy2(os.path.join(results, f), os.path.join(dest, f))
    for module in job_modules(os.path.join(ROOT, SCENARIOS[name][2])):
        shutil.copy2(module, os.path.join(dest, os.path.basename(module)))
    return dest


def write_sources() -> None:
    """tests/data/controls/SOURCES.txt: every control folder holding a history that must PASS (a
    mutation engine's source: its edits must not PASS), one a line, relative to the repository."""
    failing = tuple(folder_name(n, "") for n, row in SCENARIOS.items() if row[3] != "PASS")
    folders = sorted(d for d in os.listdir(CONTROLS)
                     if os.path.isfile(os.path.join(CONTROLS, d, "history.jsonl")) and not d.startswith(failing))
    with open(os.path.join(CONTROLS, "SOURCES.txt"), "w") as f:
        f.write("".join(f"tests/data/controls/{d}\n" for d in folders))


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="controls to record (default: all); see --list")
    ap.add_argument("--ray", default=None, help="the release (default: the installed one)")
    ap.add_argument("--runs", default="/tmp/ftharness-controls", help="where the full results folders go")
    ap.add_argument("--list", action="store_true", help="list the controls and exit")
    ap.add_argument("--lock", default=LOCK, help=f"the host's Ray lock each run holds (default {LOCK}); '' when "
                                                 f"the caller holds it already (flock LOCK record_controls.py --lock '')")
    ap.add_argument("--keep-only", action="store_true",
                    help="run nothing: keep the results already in --runs (<name>-<ray>/, a matrix's cells too)")
    args = ap.parse_args(argv)
    if args.list:
        for n, (shape, fault, path, verdict) in SCENARIOS.items():
            print(f"{n:32} {shape:22} {fault:14} {verdict:5} {path}")
        return 0
    unknown = [n for n in args.names if n not in SCENARIOS]
    if unknown:
        ap.error(f"unknown control(s): {', '.join(unknown)}; allowed: {', '.join(SCENARIOS)}")
    ray = args.ray or installed_ray()
    os.makedirs(args.runs, exist_ok=True)
    os.makedirs(CONTROLS, exist_ok=True)
    worst = 0
    for name in args.names or list(SCENARIOS):
        if args.keep_only:
            results, wall, rc = existing(name, ray, args.runs), 0.0, 0
        else:
            results, wall, rc = run_one(name, ray, args.runs, sys.executable, args.lock)
        if results is None:
            print(f"{name} on Ray {ray}: no results (exit {rc}); see {args.runs}/{name}-{ray}.log", file=sys.stderr)
            worst = max(worst, 1)
            continue
        dest = keep(name, results, ray)
        check = subprocess.run([sys.executable, "-P", "-m", "ftharness", "check", dest, "--json"],
                               capture_output=True, text=True, cwd=ROOT)
        try:
            verdict = json.loads(check.stdout)["verdict"]
        except (ValueError, KeyError, TypeError):
            verdict = f"no judgement (exit {check.returncode})"
        with open(os.path.join(results, "summary.json")) as f:
            run_wall = json.load(f).get("wall_time_s")
        print(f"{os.path.relpath(dest, ROOT)}: {verdict} (expected {SCENARIOS[name][3]}), run {run_wall} s, "
              f"{wall:.0f} s with the lock wait")
        if verdict != SCENARIOS[name][3]:
            worst = max(worst, 1)
            print(check.stdout[-3000:], file=sys.stderr)
    write_sources()
    return worst


if __name__ == "__main__":
    sys.exit(main())
