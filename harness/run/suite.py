"""`ftharness suite`: many scenarios on one embedded cluster, the CI chaos suite.

All scenarios are validated, and each one's cluster decided by the guard
(ftharness.harness.run.guard.check_route), before anything starts. Scenarios are
grouped by that cluster (its address, or an embedded cluster of one shape): an
embedded cluster is started once per shape and healed (dead nodes replaced)
between scenarios; a scenario never runs on a cluster chosen for another.
Returns one summary per scenario; the caller turns them into an exit code.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import sys
import time
import traceback
from typing import Any, Dict, List, Optional, Tuple

from ftharness import scenarios
from ftharness.harness.cluster.handles import host_gpus, open_cluster
from ftharness.harness.run.guard import Target, check_route
from ftharness.harness.run.runner import RunOptions, ScenarioRunner
from ftharness import releases
from ftharness.scenarios.schema import Scenario, load_scenario, one_line, release_problem, require_release
from ftharness.errors import ScenarioError


def catalog_dir() -> str:
    return os.path.join(os.path.dirname(os.path.abspath(scenarios.__file__)), "catalog")


def collect_files(paths: List[str]) -> List[str]:
    """Scenario files of `paths` (files, or folders of *.yaml); the built-in catalog when empty."""
    files: List[str] = []
    for p in paths or [catalog_dir()]:
        files.extend(sorted(glob.glob(os.path.join(p, "*.yaml"))) if os.path.isdir(p) else [p])
    if not files:
        raise ScenarioError(f"{', '.join(paths)}: no scenario files (*.yaml)")
    for f in files:   # a FIFO or a device is the bounded reader's to refuse, with its own line
        if not os.path.lexists(f) or os.path.isdir(f):
            raise ScenarioError(f"{f}: no such scenario file")
    return files


def host_skip(s: Scenario, path: str) -> Optional[Dict[str, str]]:
    """{scenario, file, reason} when this host lacks what `s` needs (root and nftables for
    cluster.network: namespaces: ftharness.harness.cluster.netns.refusal), else None."""
    from ftharness.harness.cluster import netns

    why = netns.refusal(s)
    return None if why is None else {"scenario": s.name, "file": os.path.abspath(path),
                                     "reason": one_line(f"{why} (this host; run it as root where nftables is)", 280)}


def collect(paths: List[str], gpus: Optional[int] = None, notes: Optional[List[str]] = None,
            skipped: Optional[List[Dict[str, str]]] = None) -> List[Scenario]:
    """The scenarios of files and folders. A folder's GPU scenarios (cluster.gpus_per_node >= 1,
    the catalog's gpu-*.yaml) are skipped, with a line on stderr, on a host without a GPU
    (`gpus`: how many this host has; None: ask nvidia-smi); a file named alone is kept. With
    `notes`, the lines about what was left out go there instead (printed once the suite starts).
    With `skipped`, a folder's scenarios this host cannot run (host_skip: a non-root CI runner and
    network namespaces) go there, with the reason, instead of refusing the whole suite."""
    say = notes.append if notes is not None else (lambda line: print(line, file=sys.stderr))
    files = collect_files(paths)
    listed = {f for p in (paths or [catalog_dir()]) if os.path.isdir(p)
              for f in glob.glob(os.path.join(p, "*.yaml"))}
    scenarios = []
    for f in files:
        s = load_scenario(f)
        if f in listed and s.cluster.gpus_per_node and s.cluster.address is None:
            gpus = len(host_gpus()) if gpus is None else gpus
            if gpus < 1:
                say(f"skipped {s.name}: needs a GPU (cluster.gpus_per_node: {s.cluster.gpus_per_node}); "
                    f"this host has none (scripts/gpu-check.sh runs it where there is one)")
                continue
        skip = host_skip(s, f) if skipped is not None and f in listed else None
        if skip is not None:
            skipped.append(skip)
            continue
        scenarios.append(s)
    if paths:   # the user's own files: one that cannot run on this release is refused
        scenarios = [require_release(s) for s in scenarios]
    else:       # the built-in catalog: what this release cannot run is left out, each said in a line
        runnable = []
        for s in scenarios:
            problem = release_problem(s, releases.installed())
            if problem:
                say(f"suite: {s.name} left out on this release: {one_line(problem, 240)}")
            else:
                runnable.append(s)
        scenarios = runnable
    names = [s.name for s in scenarios]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise ScenarioError(f"name: {', '.join(sorted(dup))} used by more than one scenario")
    return scenarios


def run_one(s: Scenario, cluster, options: RunOptions) -> Dict[str, Any]:
    """One scenario of a suite; a crash of ftharness on it is reported (verdict
    ERROR, traceback in its folder) and the suite goes on. A torchrun scenario
    (cluster None) runs on its own local agents."""
    try:
        if s.workload.runtime == "torchrun":
            from ftharness.harness.run.torchrun_runner import run_torchrun

            return run_torchrun(s, options)
        return ScenarioRunner(s, cluster, options).run()
    except KeyboardInterrupt:
        raise
    except Exception as e:  # noqa: BLE001
        os.makedirs(options.out_dir, exist_ok=True)
        with open(os.path.join(options.out_dir, "error.txt"), "w") as f:
            f.write("".join(traceback.format_exception(type(e), e, e.__traceback__)))
        summary = {"scenario": s.name, "verdict": "ERROR", "outcome": None, "error_type": type(e).__name__,
                   "error": str(e)[:2000], "matches_expectation": False, "attempts": 0, "steps": 0,
                   "budgets": {}, "faults": [], "properties": {}, "results_dir": os.path.abspath(options.out_dir),
                   "mismatches": [], "inconclusive": [],
                   "internal_error": f"{type(e).__name__}: {str(e)[:300]} (traceback in error.txt)"}
        with open(os.path.join(options.out_dir, "summary.json"), "w") as f:
            json.dump(summary, f, indent=2, default=str)
        return summary


def shape(s: Scenario):
    c = s.cluster
    return (s.workload.runtime, c.nodes, c.cpus_per_node, c.gpus_per_node, c.profile, c.network)


def targets(scenarios: List[Scenario], address: Optional[str] = None,
            allow_destructive: bool = False) -> List[Target]:
    """Each scenario's cluster, decided by the guard before anything starts (one line otherwise)."""
    return [check_route(s, allow_destructive, address=address) for s in scenarios]


def groups_of(scenarios: List[Scenario], chosen: List[Target]) -> Dict[tuple, List[Tuple[Scenario, Target]]]:
    """Scenarios sharing one cluster: the same address, or (embedded) the same shape."""
    groups: Dict[tuple, List[Tuple[Scenario, Target]]] = {}
    for s, t in zip(scenarios, chosen):
        key = ("address", t.address) if t.address else ("embedded",) + shape(s)
        groups.setdefault(key, []).append((s, t))
    return groups


def run_suite(scenarios: List[Scenario], out_dir: str, address: str = None,
              progress: bool = True, allow_destructive: bool = False) -> List[Dict[str, Any]]:
    chosen = targets(scenarios, address, allow_destructive)
    summaries = []
    t0 = time.time()
    done = 0
    for group in groups_of(scenarios, chosen).values():
        first, target = group[0]
        torchrun = first.workload.runtime == "torchrun"   # no Ray cluster: each run starts its own agents
        with (contextlib.nullcontext() if torchrun else open_cluster(first.cluster, target.address)) as cluster:
            for s, target in group:
                if cluster is not None:   # (torchrun: none)
                    cluster.heal()
                elapsed = time.time() - t0
                eta = f", ~{elapsed / done * (len(scenarios) - done):.0f}s left" if done else ""
                print(f"[{done + 1}/{len(scenarios)}] {s.name} ({elapsed:.0f}s elapsed{eta})",
                      file=sys.stderr, flush=True)
                options = RunOptions(out_dir=os.path.join(out_dir, s.name), address=target.address,
                                     address_source=target.source, progress=progress,
                                     allow_destructive=target.allow_destructive)
                summary = run_one(s, cluster, options)
                summaries.append(summary)
                done += 1
                print(f"  {summary['verdict']} {s.name}: {summary['outcome']} "
                      f"({summary.get('error_type') or 'no error'}), attempts {summary['attempts']}, "
                      f"budgets {summary['budgets']}", flush=True)
                for m in summary.get("mismatches", []):
                    print(f"    - {one_line(m)}", flush=True)
                for m in summary.get("inconclusive", []):
                    print(f"    ? {one_line(m)}", flush=True)
    return summaries
