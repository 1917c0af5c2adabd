"""pandas frames over one or many results folders, for reports and comparisons.

`Frames.load(paths)` reads each folder's history.jsonl and summary.json and
builds one frame per question; every row carries `results` (the folder) so
frames of many runs stack and group cleanly:

- scenarios: one row per folder (summary.json flattened, plus run metrics and
  `t_run_start`, the epoch time of the first run_start)
- faults: what the injector was asked to do and what it did
- attempts: one row per fit and attempt: timeline, group, restore, ending
- steps: one row per step event, `lost` when a later attempt redid the step
- checkpoints: written (worker), reported (worker), registered (controller)
- decisions: failure-policy decisions with their budget class
- properties: property verdicts from summary.json
- recovery: `metrics.recovery_table` per folder
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from typing import Any, Dict, Iterable, List, Optional, Tuple, Union

import pandas as pd

from ftharness.history.records import HISTORY_FILE, read_events
from ftharness.reports import metrics

Event = Dict[str, Any]
PathLike = Union[str, "os.PathLike[str]"]
SUMMARY_FILE = "summary.json"

FAULT_COLUMNS = ["results", "seq", "fit_index", "event", "fault", "fault_kind", "t",
                 "t_requested", "t_done", "delay_s", "detail"]
ATTEMPT_COLUMNS = ["results", "fit_index", "attempt", "attempt_id", "n_starts", "t_start",
                   "t_group_started", "t_worker_start", "t_first_step", "t_end", "world_size",
                   "nodes", "n_nodes", "restored_checkpoint", "restored_step", "first_step",
                   "last_step", "n_steps", "ended", "error_type", "budget", "decision"]
STEP_COLUMNS = ["results", "seq", "fit_index", "attempt", "attempt_id", "rank", "node_id",
                "pid", "world_size", "step", "t", "n_rows", "epoch", "loss", "lost"]
CHECKPOINT_COLUMNS = ["results", "seq", "fit_index", "attempt", "attempt_id", "rank", "event",
                      "step", "t", "checkpoint", "path"]
DECISION_COLUMNS = ["results", "seq", "fit_index", "attempt", "attempt_id", "t", "prev", "state",
                    "budget", "decision", "error_type", "count", "drain_timed_out",
                    "worker_failures"]
PROPERTY_COLUMNS = ["results", "scenario", "property", "passed", "explanation"]
#: run_metrics values that fit in one cell of the scenarios frame
SCENARIO_METRICS = ("fits", "failures", "faults_injected", "last_step", "mean_recovery_s",
                    "max_recovery_s", "lost_steps", "lost_step_s", "productive_s", "ettr")
CHECKPOINT_EVENTS = {"checkpoint_written": "written", "report": "reported",
                     "checkpoint_registered": "registered"}


# ---------------------------------------------------------------------- helpers
def _frame(rows: List[Event], columns: List[str]) -> pd.DataFrame:
    """Rows as a frame with `columns` first, in order, even when empty; keys
    beyond them (flattened targets, failure counts) follow."""
    df = pd.DataFrame(rows)
    extra = [c for c in df.columns if c not in columns]
    return df.reindex(columns=columns + extra)


def _flat(d: Optional[Dict[str, Any]], prefix: str = "") -> Dict[str, Any]:
    """Nested dicts as dotted keys; lists and scalars stay values."""
    out: Dict[str, Any] = {}
    for k, v in (d or {}).items():
        if isinstance(v, dict) and v:
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _of(events: List[Event], *kinds: str) -> List[Event]:
    return [e for e in events if e.get("kind") in kinds]


def _pick(e: Event, *keys: str) -> Event:
    return {k: e.get(k) for k in keys}


# ------------------------------------------------------------------- frames
def scenario_row(results: str, summary: Dict[str, Any], events: List[Event]) -> Event:
    """summary.json flattened (properties go to their own frame); the history's
    run_start fills scenario and run_name for a run that wrote no summary."""
    start = next(iter(_of(events, "run_start")), {})
    row = {"results": results, "scenario": start.get("scenario"), "run_name": start.get("run_name")}
    row.update(_flat({k: v for k, v in summary.items() if k != "properties"}))
    row["t_run_start"] = start.get("t")
    found = metrics.run_metrics(events, summary)
    row.update({f"metrics.{k}": found[k] for k in SCENARIO_METRICS})
    return row


def fault_rows(results: str, events: List[Event]) -> List[Event]:
    rows = []
    for e in _of(events, "fault_injected", "fault_healed", "fault_skipped"):
        row = {"results": results, "event": e["kind"][len("fault_"):],
               **_pick(e, "seq", "fit_index", "fault", "fault_kind", "t", "t_requested",
                       "t_done", "detail")}
        row["delay_s"] = metrics.span(e.get("t_requested"), e.get("t_done"))
        row.update(_flat(e.get("target_asked"), "asked."))
        row.update(_flat(e.get("target_hit"), "hit."))
        rows.append(row)
    return rows


def _ending(evs: List[Event], run_end: Optional[Event]) -> Event:
    """How an attempt ended, from the controller's own record when it has one;
    otherwise the fit's run_end speaks (a lost controller), else it is open."""
    failures = _of(evs, "failure")
    if failures:
        return {"ended": "failure", **_pick(failures[-1], "error_type", "budget", "decision")}
    states = {e.get("cur") for e in _of(evs, "controller_state")}
    if "RESIZING" in states:
        return {"ended": "resized"}
    if "FINISHED" in states or _of(evs, "worker_end"):
        return {"ended": "finished"}
    if run_end is not None:
        return {"ended": "fit_ended", "error_type": run_end.get("error_type")}
    return {"ended": "open"}


def attempt_row(results: str, evs: List[Event], run_end: Optional[Event]) -> Event:
    """One attempt; `t_end` is the last event recorded for it."""
    evs = sorted(evs, key=lambda e: e["t"])
    starts, groups = _of(evs, "attempt_start"), _of(evs, "worker_group_started")
    wstarts = sorted(_of(evs, "worker_start"), key=lambda e: (e.get("rank") is None, e.get("rank")))
    steps = [int(e["step"]) for e in _of(evs, "step") if e.get("step") is not None]
    group = groups[-1] if groups else {}
    nodes = sorted({w.get("node_id") for w in group.get("workers") or [] if w.get("node_id")})
    world = group.get("world_size") or (starts[-1].get("num_workers") if starts else None)
    first_restore = wstarts[0] if wstarts else {}
    return {
        "results": results, "fit_index": evs[0]["fit_index"], "attempt": evs[0]["attempt"],
        "attempt_id": next((e["attempt_id"] for e in evs if e.get("attempt_id")), None),
        "n_starts": len(starts),
        "t_start": starts[0]["t"] if starts else None,
        "t_group_started": group.get("t"),
        "t_worker_start": min((e["t"] for e in wstarts), default=None),
        "t_first_step": min((e["t"] for e in _of(evs, "step")), default=None),
        "t_end": evs[-1]["t"],
        "world_size": world, "nodes": nodes, "n_nodes": len(nodes),
        "restored_checkpoint": first_restore.get("restored_checkpoint"),
        "restored_step": first_restore.get("restored_step"),
        "first_step": min(steps, default=None), "last_step": max(steps, default=None),
        "n_steps": len(set(steps)),
        **_ending(evs, run_end),
    }


def attempt_rows(results: str, events: List[Event]) -> List[Event]:
    by_attempt: Dict[tuple, List[Event]] = {}
    for e in events:
        if e.get("attempt") is not None:
            by_attempt.setdefault((e["fit_index"], e["attempt"]), []).append(e)
    ends = {e["fit_index"]: e for e in _of(events, "run_end")}
    return [attempt_row(results, evs, ends.get(fit)) for (fit, _), evs in sorted(by_attempt.items())]


def step_rows(results: str, events: List[Event]) -> List[Event]:
    lost = metrics.step_table(events).set_index(["fit_index", "attempt", "step"])["lost"].to_dict()
    return [{"results": results,
             **_pick(e, "seq", "fit_index", "attempt", "attempt_id", "rank", "node_id", "pid",
                     "world_size", "step", "t", "n_rows", "epoch", "loss"),
             "lost": lost.get((e["fit_index"], e["attempt"], e.get("step")))}
            for e in _of(events, "step")]


def checkpoint_rows(results: str, events: List[Event]) -> List[Event]:
    """Checkpoints along their path; a report without a checkpoint is left out."""
    rows = []
    for e in _of(events, *CHECKPOINT_EVENTS):
        if e["kind"] == "report" and not e.get("checkpoint"):
            continue
        rows.append({"results": results, "event": CHECKPOINT_EVENTS[e["kind"]],
                     **_pick(e, "seq", "fit_index", "attempt", "attempt_id", "rank", "step", "t",
                             "checkpoint"),
                     "path": e.get("path") or e.get("local_path")})
    return rows


def decision_rows(results: str, events: List[Event]) -> List[Event]:
    """Failure decisions, each with the state change it was taken on."""
    rows, change = [], {}
    for e in events:
        if e.get("kind") == "controller_state":
            change = e
        elif e.get("kind") == "failure":
            rows.append({"results": results, "prev": change.get("prev"), "state": change.get("cur"),
                         "worker_failures": change.get("worker_failures"),
                         **_pick(e, "seq", "fit_index", "attempt", "attempt_id", "t", "budget",
                                 "decision", "error_type", "count", "drain_timed_out"),
                         **_flat(e.get("counts"), "counts.")})
    return rows


def property_rows(results: str, summary: Dict[str, Any]) -> List[Event]:
    return [{"results": results, "scenario": summary.get("scenario"), "property": name,
             "passed": (verdict or {}).get("passed"), "explanation": (verdict or {}).get("explanation")}
            for name, verdict in (summary.get("properties") or {}).items()]



# ----------------------------------------------------------------- loading
def results_folders(paths: Union[PathLike, Iterable[PathLike]]) -> List[str]:
    """Each path is a results folder, or a folder of them (one level down)."""
    paths = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    out = []
    for p in map(os.fspath, paths):
        if _is_results(p):
            out.append(p)
            continue
        found = sorted(os.path.join(p, d) for d in os.listdir(p) if _is_results(os.path.join(p, d))) \
            if os.path.isdir(p) else []
        if not found:
            raise FileNotFoundError(f"{p}: no {HISTORY_FILE} or {SUMMARY_FILE} here or one level down")
        out.extend(found)
    return out


def _is_results(path: str) -> bool:
    return any(os.path.isfile(os.path.join(path, f)) for f in (HISTORY_FILE, SUMMARY_FILE))


def read_results(path: str) -> Tuple[Dict[str, Any], List[Event]]:
    """(summary, events) of a folder; a missing file reads as empty, so a run
    that crashed before writing its summary still loads. summary.json is read
    through the one reader (ftharness.inputs.read_input, kind summary: a regular
    file, not under /proc, /sys or /dev, bounded in size, nesting and values, a
    JSON object); a file it refuses raises ValueError (InputRefused: one line)."""
    from ftharness.inputs import read_input

    summary_path = os.path.join(path, SUMMARY_FILE)
    summary = {}
    if os.path.exists(summary_path):   # the one reader, kind summary: bounded, an object, or one line
        summary = read_input(summary_path, "summary")
    events = read_events(path) if os.path.isfile(os.path.join(path, HISTORY_FILE)) else []
    return summary, events


def folder_frames(path: str) -> Dict[str, pd.DataFrame]:
    from ftharness.reports.judgement import judged_summary

    _, raw = read_results(path)
    summary = judged_summary(path)   # the one judgement every output shows (ftharness.reports.judgement)
    events = metrics.annotate(raw)
    recovery = metrics.recovery_table(events)
    recovery.insert(0, "results", path)
    return {
        "scenarios": _frame([scenario_row(path, summary, events)], ["results", "scenario", "run_name"]),
        "faults": _frame(fault_rows(path, events), FAULT_COLUMNS),
        "attempts": _frame(attempt_rows(path, events), ATTEMPT_COLUMNS),
        "steps": _frame(step_rows(path, events), STEP_COLUMNS),
        "checkpoints": _frame(checkpoint_rows(path, events), CHECKPOINT_COLUMNS),
        "decisions": _frame(decision_rows(path, events), DECISION_COLUMNS),
        "properties": _frame(property_rows(path, summary), PROPERTY_COLUMNS),
        "recovery": recovery,
    }


# ------------------------------------------------------------------- writing
def missing(v: Any) -> bool:
    """None or NaN: a cell with no value."""
    return v is None or (isinstance(v, float) and math.isnan(v))


def _storable(df: pd.DataFrame) -> pd.DataFrame:
    """Parquet wants one type per column: object columns that mix types, hold
    dicts, or hold lists of dicts or lists (e.g. `ray_settings`, whose values mix
    numbers and text) become JSON text; flat lists of scalars stay lists."""
    df = df.copy()
    for col in df.columns[df.dtypes == object]:
        types = {type(v) for v in df[col] if not missing(v)}
        nested = any(isinstance(x, (dict, list)) for v in df[col] if isinstance(v, list) for x in v)
        if len(types) > 1 or dict in types or nested:
            df[col] = df[col].map(lambda v: None if missing(v) else json.dumps(v, default=str))
    return df


def _stack(frames: List[pd.DataFrame]) -> pd.DataFrame:
    """Concatenate, leaving out empty frames: their all-NaN float columns
    would turn booleans and integers of the others into floats."""
    full = [f for f in frames if not f.empty] or frames[:1]
    return pd.concat(full, ignore_index=True)


@dataclasses.dataclass
class Frames:
    scenarios: pd.DataFrame
    faults: pd.DataFrame
    attempts: pd.DataFrame
    steps: pd.DataFrame
    checkpoints: pd.DataFrame
    decisions: pd.DataFrame
    properties: pd.DataFrame
    recovery: pd.DataFrame

    @classmethod
    def load(cls, paths: Union[PathLike, Iterable[PathLike]]) -> "Frames":
        """Frames of every results folder under `paths`, stacked."""
        per_folder = [folder_frames(p) for p in results_folders(paths)]
        return cls(**{name: _stack([f[name] for f in per_folder]) for name in cls.names()})

    @classmethod
    def names(cls) -> List[str]:
        return [f.name for f in dataclasses.fields(cls)]

    def to_csv(self, out_dir: PathLike) -> List[str]:
        return self._write(out_dir, "csv", lambda df, p: df.to_csv(p, index=False))

    def to_parquet(self, out_dir: PathLike) -> List[str]:
        return self._write(out_dir, "parquet", lambda df, p: _storable(df).to_parquet(p, index=False))

    def _write(self, out_dir: PathLike, ext: str, write) -> List[str]:
        """One file per frame, `out_dir/<name>.<ext>`; returns their paths."""
        os.makedirs(out_dir, exist_ok=True)
        paths = []
        for name in self.names():
            path = os.path.join(os.fspath(out_dir), f"{name}.{ext}")
            write(getattr(self, name), path)
            paths.append(path)
        return paths
