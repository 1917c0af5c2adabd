"""`ftharness suite`: many scenarios on one embedded cluster, the CI chaos suite.

All scenarios are validated, and each one's cluster decided by the guard
(ftharness.harness.run.guard.check_route), before anything starts. Scenarios are
grouped by that cluster (its address, or an embedded cluster of one shape): an
embedded cluster is started once per shape and healed (dead nodes replaced)
between scenarios; a scenario never runs on a cluster chosen for another.
Returns one summary per scenario; the caller turns them into an exit code.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from typing import Any, Dict, List, Tuple

from ftharness.outputs import write_file
from ftharness.harness.run.collect import targets
from ftharness.harness.run.guard import Target
from ftharness.harness.run.runner import RunOptions, runtime_of
from ftharness.scenarios.job_error import other_reasons, verdict_line
from ftharness.scenarios.schema import Scenario, one_line


def run_one(s: Scenario, cluster, options: RunOptions) -> Dict[str, Any]:
    """One scenario of a suite, on its runtime's cluster (`cluster` None: a runtime that starts
    its own processes, torchrun); a crash of ftharness on it is reported (verdict ERROR,
    traceback in its folder) and the suite goes on."""
    try:
        return runtime_of(s).run_on(s, cluster, options)
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


def groups_of(scenarios: List[Scenario], chosen: List[Target]) -> Dict[tuple, List[Tuple[Scenario, Target]]]:
    """Scenarios sharing one cluster: the same address, or (embedded) the same shape."""
    groups: Dict[tuple, List[Tuple[Scenario, Target]]] = {}
    for s, t in zip(scenarios, chosen):
        key = ("address", t.address) if t.address else ("embedded",) + shape(s)
        groups.setdefault(key, []).append((s, t))
    return groups


TIMING_FILE = "suite-timing.json"


def write_timing(out_dir: str, timing: List[Dict[str, Any]]) -> None:
    """When each scenario's heal began, and its run (set-up to summary) began and ended, in the
    order they ran: what the suite itself spends between runs (benchmarks/run_phases.py)."""
    write_file(out_dir, TIMING_FILE, json.dumps(timing, indent=1), overwrite=True)


def run_suite(scenarios: List[Scenario], out_dir: str, address: str = None,
              progress: bool = True, allow_destructive: bool = False) -> List[Dict[str, Any]]:
    chosen = targets(scenarios, address, allow_destructive)
    summaries = []
    timing: List[Dict[str, Any]] = []   # the suite's own time around each run: benchmarks/run_phases.py
    t0 = time.time()
    done = 0
    for group in groups_of(scenarios, chosen).values():
        first, target = group[0]
        # the group's cluster: its runtime's (torchrun: none, each run starts its own agents)
        with runtime_of(first).cluster(first, target.address) as cluster:
            for s, target in group:
                t_heal = time.time()
                if cluster is not None:
                    cluster.heal()
                t_run = time.time()
                elapsed = time.time() - t0
                eta = f", ~{elapsed / done * (len(scenarios) - done):.0f}s left" if done else ""
                if progress:   # --quiet: the verdicts only
                    print(f"[{done + 1}/{len(scenarios)}] {s.name} ({elapsed:.0f}s elapsed{eta})",
                          file=sys.stderr, flush=True)
                options = RunOptions(out_dir=os.path.join(out_dir, s.name), address=target.address,
                                     address_source=target.source, progress=progress,
                                     allow_destructive=target.allow_destructive)
                summary = run_one(s, cluster, options)
                summaries.append(summary)
                timing.append({"scenario": s.name, "heal_start": t_heal, "run_start": t_run, "run_end": time.time(),
                               "heal": dict(cluster.heal_timing) if cluster is not None else {}})
                write_timing(out_dir, timing)
                done += 1
                figures = (f"{summary['outcome']} ({summary.get('error_type') or 'no error'}), "
                           f"attempts {summary['attempts']}, budgets {summary['budgets']}")
                print("  " + one_line(verdict_line(summary["verdict"], s.name, summary, figures), 600), flush=True)
                mismatches, inconclusive = other_reasons(summary)   # the job's own error is on the line above
                for m in mismatches:
                    print(f"    - {one_line(m)}", flush=True)
                for m in inconclusive:
                    print(f"    ? {one_line(m)}", flush=True)
    return summaries
