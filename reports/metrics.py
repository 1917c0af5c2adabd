"""Recovery time, lost work, ETTR and budget use of one run, as pandas frames.

What an attempt, an outage and a recovery are, and how each figure is
measured, is decided once in `ftharness.history.model` (pure, no pandas); this
module only lays the model out as DataFrames and dicts for the reports, so a
recovery time here is the number the `recovers` property and summary.json
give for the same recovery.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Iterable, List, Optional

import pandas as pd

from ftharness.history.model import DISRUPTED, PARTS, as_history, span, wall_time

Event = Dict[str, Any]

__all__ = ["DISRUPTED", "PARTS", "RECOVERY_COLUMNS", "STEP_COLUMNS", "TEXT_COLUMNS", "annotate", "budget_use",
           "ettr", "fault_kind_table", "lost_work", "outages", "recovery_table", "run_metrics", "span", "step_table", "wall_time"]

RECOVERY_COLUMNS = [
    "source", "fault", "fault_kind", "fit_index", "attempt", "t0", "t_requested",
    "t_detect", "state", "budget", "decision", "error_type", "recovered_fit",
    "recovered_attempt", "restored_step", "t_first_step", *PARTS, "recovery_s",
]
TEXT_COLUMNS = ("source", "fault_kind", "state", "budget", "decision", "error_type")
STEP_COLUMNS = ["fit_index", "attempt", "step", "t_begin", "t_end", "seconds", "lost"]


def annotate(events: Iterable[Event]) -> List[Event]:
    """Copies of the events in `seq` order, each with the `fit_index` and
    `attempt` the history model places it in (ftharness.history.model)."""
    return as_history(events).annotated()


def outages(events: Iterable[Event]) -> List[Event]:
    """The model's outages as dicts: fit_index, attempt (the one that failed),
    t and seq of the opening change, state, failures."""
    return [dataclasses.asdict(o) for o in as_history(events).outages()]


def recovery_table(events: Iterable[Event]) -> pd.DataFrame:
    """One row per recovery of the model: per injected fault, plus one per
    outage with a failure decision that no fault claims (every outage of a run
    with no faults). Parts: detection (to the first disrupting state change),
    teardown (to the attempt_start of the recovering attempt), scheduling (to
    worker_group_started), restore (to its first worker_start), first step (to
    its first step); recovery_s is their sum."""
    rows = [r.row() for r in as_history(events).recoveries()]
    table = pd.DataFrame(rows, columns=RECOVERY_COLUMNS)
    numeric = [c for c in RECOVERY_COLUMNS if c not in TEXT_COLUMNS]
    table[numeric] = table[numeric].apply(pd.to_numeric)
    return table.sort_values("t0", ignore_index=True)


def step_table(events: Iterable[Event]) -> pd.DataFrame:
    """Steps as the worker group did them: one row per (fit, attempt, step)
    (ftharness.history.model.StepSpan). The first step of an attempt has no
    `seconds`: its time is start-up (restore, warm-up, compilation), which
    Meta's ETTR and Google's goodput both count as unproductive. `lost` marks a
    step that a later attempt computed again, i.e. work thrown away by a rollback."""
    spans = as_history(events).step_spans()
    if not spans:
        return pd.DataFrame(columns=STEP_COLUMNS)
    table = pd.DataFrame([dataclasses.asdict(s) for s in spans], columns=STEP_COLUMNS)
    for col in ("t_begin", "t_end", "seconds"):
        table[col] = pd.to_numeric(table[col]).astype(float)
    table["lost"] = table["lost"].astype(bool)
    return table


def lost_work(events: Iterable[Event]) -> Dict[str, Any]:
    """Steps computed and thrown away, and their seconds (History.lost_work)."""
    return as_history(events).lost_work()


def ettr(events: Iterable[Event]) -> Dict[str, Any]:
    """Effective training time ratio: productive step time over wall time (History.ettr)."""
    return as_history(events).ettr()


def budget_use(events: Iterable[Event], failure_config: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """Failures charged per budget class against the configured limit (History.budget_use)."""
    return as_history(events).budget_use(failure_config)


def run_metrics(events: Iterable[Event], summary: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """The metrics of one run, as one JSON-able dict (History.run_metrics).

    `summary` (summary.json) supplies the failure limits; the history's
    run_start does when it has none.
    """
    return as_history(events).run_metrics((summary or {}).get("failure_config"))


FAULT_KIND_COLUMNS = ["fault_kind", "recoveries", "recovered", "recovery_s_median", "recovery_s_p95",
                      "recovery_s_max", "detection_s_median", "lost_steps", "lost_steps_per_recovery"]


def fault_kind_table(events: Iterable[Event]) -> pd.DataFrame:
    """Recovery time and lost work per fault kind over a whole run (a soak):
    one row per kind of the recoveries; lost steps are those of the attempt
    each recovery's outage ended (recoveries nobody injected are `failure`)."""
    h = as_history(events)
    recs = recovery_table(h)
    if recs.empty:
        return pd.DataFrame(columns=FAULT_KIND_COLUMNS)
    steps = step_table(h)
    lost = (steps[steps["lost"]].groupby(["fit_index", "attempt"]).size()
            if not steps.empty else pd.Series(dtype=int))
    recs["fault_kind"] = recs["fault_kind"].fillna(recs["source"])
    recs["lost_steps"] = [int(lost.get((f, a), 0)) if pd.notna(a) else 0
                          for f, a in zip(recs["fit_index"], recs["attempt"])]
    rows = []
    for kind, g in recs.groupby("fault_kind", sort=True):
        r = g["recovery_s"].dropna()
        rows.append({
            "fault_kind": kind, "recoveries": len(g), "recovered": int(r.size),
            "recovery_s_median": round(float(r.median()), 3) if r.size else None,
            "recovery_s_p95": round(float(r.quantile(0.95)), 3) if r.size else None,
            "recovery_s_max": round(float(r.max()), 3) if r.size else None,
            "detection_s_median": (round(float(g["detection_s"].dropna().median()), 3)
                                   if g["detection_s"].notna().any() else None),
            "lost_steps": int(g["lost_steps"].sum()),
            "lost_steps_per_recovery": round(float(g["lost_steps"].mean()), 3),
        })
    return pd.DataFrame(rows, columns=FAULT_KIND_COLUMNS)
