"""`ftharness doctor --run`: a short dynamic probe of a user's train function.

The static doctor reads code; the probe watches the job survive one fault on
the embedded cluster: two workers, rank 1 killed right after its `KILL_AFTER`-th
report, one retry allowed. The verdict's lost-work property then says how
much the restart redid, and whether the job's checkpoints were reported and
restored at all.
"""

from __future__ import annotations

import os
from typing import Any, Dict, Optional

from ftharness.faults.process import KillWorker
from ftharness.scenarios.schema import Scenario, parse_scenario

KILL_AFTER = 3      # reports before the kill: a checkpoint cadence of 1-2 shows as lost work <= 2


def probe_scenario(entrypoint: str, trainer: str = "torch", datasets: Optional[str] = None,
                   config: Optional[Dict[str, Any]] = None, base_dir: Optional[str] = None) -> Scenario:
    """The probe as a scenario: bad input is refused here, before a cluster starts."""
    workload: Dict[str, Any] = {"entrypoint": entrypoint, "trainer": trainer, "num_workers": 2,
                                "train_loop_config": dict(config or {})}
    if datasets:
        workload["datasets"] = datasets
    return parse_scenario({
        "name": "doctor-probe",
        "description": f"doctor --run {entrypoint}: rank 1 killed after report {KILL_AFTER}, one retry",
        "cluster": {"nodes": 3, "cpus_per_node": 1},
        "workload": workload,
        "failure_config": {"max_failures": 1},
        "faults": [{"kind": KillWorker.kind, "target": {"rank": 1}, "at": {"step": KILL_AFTER}}],
        "timeout_s": 900,
    }, source="doctor --run", base_dir=base_dir or os.getcwd())


def probe_lines(summary: Dict[str, Any]) -> list:
    """What the probe found, a line each: lost work first, then each property."""
    metrics = summary.get("run_metrics") or {}
    lines = [f"probe: {summary.get('verdict')} after {summary.get('attempts')} attempt(s), "
             f"{summary.get('steps')} step(s) (a step is one ray.train.report); "
             f"lost steps {metrics.get('lost_steps')}"]
    for name, p in (summary.get("properties") or {}).items():
        if name in (summary.get("expected_properties") or []):
            lines.append(f"  {name}: {p['status']}: {p['explanation']}")
    return lines
