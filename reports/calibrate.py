"""A simulator Calibration measured from results folders.

Lives in reports/ because measuring needs the results reader and the metrics
(ftharness.reports.frames, ftharness.reports.advice, ftharness.reports.metrics), which sit above the pure
simulator: step time and checkpoint cost as advice.measure finds them, the
registration lag from the history (a checkpoint's last rank report to its
checkpoint_registered), and the recoveries per fault kind from
metrics.recovery_table (the numbers summary.json gives).
"""

from __future__ import annotations

from typing import Dict, Iterable, List

import numpy as np

from ftharness.faults.process import KillWorker
from ftharness.history.model import PARTS
from ftharness.reports import metrics
from ftharness.reports.advice import measure
from ftharness.reports.frames import PathLike, read_results, results_folders
from ftharness.scenarios.simulator.calibration import DEFAULTS, Calibration


def registration_lags(events) -> List[float]:
    """Seconds from the last rank's report of a checkpoint to its registration."""
    reports: Dict[tuple, float] = {}
    named: Dict[str, tuple] = {}
    lags = []
    for e in metrics.annotate(events):
        if e.get("kind") == "report":
            key = (e.get("fit_index"), e.get("attempt"), e.get("step"))
            reports[key] = max(reports.get(key, e["t"]), e["t"])
            if e.get("checkpoint"):
                named[e["checkpoint"]] = key
        elif e.get("kind") == "checkpoint_registered" and e.get("checkpoint") in named:
            lags.append(e["t"] - reports[named[e["checkpoint"]]])
    return lags


def from_results(paths: Iterable[PathLike]) -> Calibration:
    """Pool the folders' measurements; a figure they do not measure keeps its
    default, and `source` says which did."""
    folders = results_folders(list(paths))
    found = measure(folders)
    lags: List[float] = []
    recoveries: Dict[str, List[float]] = {}
    parts: Dict[str, Dict[str, List[float]]] = {}
    for folder in folders:
        events = read_results(folder)[1]
        lags += registration_lags(events)
        table = metrics.recovery_table(events).dropna(subset=["recovery_s"])
        for row in table.to_dict("records"):
            kind = row.get("fault_kind") if isinstance(row.get("fault_kind"), str) else KillWorker.kind
            recoveries.setdefault(kind, []).append(float(row["recovery_s"]))
            for p in PARTS:
                if row.get(p) == row.get(p) and row.get(p) is not None:
                    parts.setdefault(kind, {}).setdefault(p, []).append(float(row[p]))
    kept = []
    step = found.get("plain_step_s")
    cost = found.get("checkpoint_cost_s")
    if step is None or step <= 0:
        step = DEFAULTS.step_s
        kept.append("step")
    if cost is None or cost < 0:
        cost = DEFAULTS.checkpoint_s
        kept.append("checkpoint cost")
    if not lags:
        kept.append("registration lag")
    if not recoveries:
        kept.append("recoveries")
    source = f"measured: {len(folders)} results folder(s) ({', '.join(folders[:3])}{', ...' if len(folders) > 3 else ''})"
    if kept:
        source += f"; defaults for {', '.join(kept)}"
    return Calibration(
        step_s=float(step), checkpoint_s=float(cost),
        registration_lag_s=float(np.median(lags)) if lags else DEFAULTS.registration_lag_s,
        recoveries={k: tuple(v) for k, v in recoveries.items()} or DEFAULTS.recoveries,
        parts={k: {p: float(np.mean(v)) for p, v in ps.items()} for k, ps in parts.items()} or DEFAULTS.parts,
        source=source)
