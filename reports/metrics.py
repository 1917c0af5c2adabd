"""Recovery time, lost work, ETTR and budget use, from the events of one run.

Pure functions over the event dicts of `harness.history.read_events`
(docs/history.md): no Ray and no files, so they run on old results folders
and on synthetic histories alike.

Times are differences of the emitters' `t` (wall clocks). Order among events
of one source follows `seq`; across sources (injector against controller
against workers) only `t` is meaningful, because an event arrives at the
history actor some time after it happened.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Dict, Iterable, List, Optional, Tuple

import pandas as pd

Event = Dict[str, Any]
Key = Tuple[int, int]  # (fit_index, attempt)

#: controller states that take a run off its healthy path
DISRUPTED = frozenset({"PREEMPTING", "RESTARTING", "RESCHEDULING", "ERRORED"})
#: failure budget class -> the failure_config key that limits it ("none": not retryable)
LIMITS = {"worker_group": "max_failures", "preemption": "max_preemption_failures",
          "controller": "controller_failure_limit", "none": None}
PARTS = ("detection_s", "teardown_s", "scheduling_s", "restore_s", "first_step_s")
RECOVERY_COLUMNS = [
    "source", "fault", "fault_kind", "fit_index", "attempt", "t0", "t_requested",
    "t_detect", "state", "budget", "decision", "error_type", "recovered_fit",
    "recovered_attempt", "restored_step", "t_first_step", *PARTS, "recovery_s",
]
TEXT_COLUMNS = ("source", "fault_kind", "state", "budget", "decision", "error_type")
STEP_COLUMNS = ["fit_index", "attempt", "step", "t_begin", "t_end", "seconds", "lost"]


# ----------------------------------------------------------------- attribution
def annotate(events: Iterable[Event]) -> List[Event]:
    """Copies of the events in `seq` order, each with `fit_index` and `attempt`.

    Only run_start/run_end name their fit and only workers their attempt, so
    both come from attempt ids: attempt N of a fit is the N-th id its
    controller started (RESCHEDULING reuses one), and an event carrying a known
    id, a zombie's too, lands in that id's fit. Other events get the fit they
    arrived in; without a known id a worker keeps its own `attempt`.
    """
    out: List[Event] = []
    fit_of: Dict[str, int] = {}
    ordinal: Dict[str, int] = {}
    per_fit: Counter = Counter()
    fit, n_fits = 1, 0
    for e in sorted(events, key=lambda e: e.get("seq", 0)):
        e = dict(e)
        aid = e.get("attempt_id")
        if e.get("kind") == "run_start":
            n_fits += 1
            fit = int(e.get("fit_index") or n_fits)
        if e.get("kind") == "attempt_start" and aid is not None and aid not in fit_of:
            per_fit[fit] += 1
            fit_of[aid], ordinal[aid] = fit, per_fit[fit]
        e["fit_index"] = fit_of.get(aid, fit)
        e["attempt"] = ordinal.get(aid, e.get("attempt"))
        out.append(e)
    return out


def _key(e: Event) -> Optional[Key]:
    return None if e.get("attempt") is None else (int(e["fit_index"]), int(e["attempt"]))


def _index(events: List[Event]) -> Dict[str, Dict[Key, List[Event]]]:
    """kind -> attempt -> its events of that kind, in time order."""
    idx: Dict[str, Dict[Key, List[Event]]] = {}
    for e in sorted(events, key=lambda e: e["t"]):
        key = _key(e)
        if key is not None:
            idx.setdefault(e["kind"], {}).setdefault(key, []).append(e)
    return idx


def _disrupts(e: Event) -> bool:
    """A state change off the healthy path: a failure state, or any state
    carrying an error (SHUTTING_DOWN toward ERRORED). Leaving RUNNING for
    FINISHED or RESIZING is not one."""
    return e.get("cur") in DISRUPTED or bool(e.get("error_type"))


def outages(events: Iterable[Event]) -> List[Event]:
    """Outages as the controller recorded them, in order.

    One opens at the first disrupting state change and lasts until the fit's
    next attempt_start, so RUNNING->PREEMPTING->RESTARTING is one outage and the
    failure decisions taken during it belong to it. Each: fit_index, attempt
    (the one that failed), t and seq of the opening change, state, failures.
    """
    out: List[Event] = []
    cur: Optional[Event] = None
    for e in annotate(events):
        kind = e.get("kind")
        if kind in ("attempt_start", "run_start"):
            cur = None
        elif kind == "controller_state" and cur is None and _disrupts(e):
            cur = {"fit_index": e["fit_index"], "attempt": e["attempt"], "t": e["t"],
                   "seq": e.get("seq"), "state": e.get("cur"), "failures": []}
            out.append(cur)
        elif kind == "failure" and cur is not None:
            cur["failures"].append(e)
    return out


# -------------------------------------------------------------------- recovery
def span(a: Optional[float], b: Optional[float]) -> Optional[float]:
    """b - a in seconds, to the microsecond of the clocks; None if either is."""
    return None if a is None or b is None else round(b - a, 6)


def _t(e: Optional[Event]) -> Optional[float]:
    return None if e is None else e["t"]


def _first_time(e: Event, *keys: str) -> float:
    """The first of `keys` the event has a value for, else its own `t`."""
    return next((e[k] for k in keys if e.get(k) is not None), e["t"])


def _last_at_or_before(events: List[Event], t: float, since: float) -> Optional[Event]:
    hits = [e for e in events if since < e["t"] <= t]
    return hits[-1] if hits else None


def _first_at_or_after(events: List[Event], t: Optional[float]) -> Optional[Event]:
    return next((e for e in events if t is not None and e["t"] >= t), None)


def _recovery(idx, steps: List[Event], t0: float, fit: int, outage: Optional[Event]) -> Event:
    """The path from `t0` back to training, measured on the attempt that made
    the first step after the outage (with a cascade of failed restarts that
    attempt is the last of them, and teardown covers the failed ones).

    Without an outage in its fit the fault did not stop training there unless
    the fit itself ended (a lost controller): then only a later fit recovers.
    The parts telescope: detection + teardown + scheduling + restore +
    first step = recovery whenever all of them were recorded.
    """
    t_detect = _t(outage)
    since = t0 if t_detect is None else t_detect
    starts = idx.get("attempt_start", {})

    def restarted(e: Event) -> bool:
        later = outage is not None or e["fit_index"] > fit
        return later and any(s["t"] > since for s in starts.get(_key(e), ()))

    row = {"t_detect": t_detect, "detection_s": span(t0, t_detect)}
    step = next((e for e in steps if e["t"] > since and restarted(e)), None)
    if step is None:
        return row
    key = _key(step)
    start = _last_at_or_before(starts[key], step["t"], since)
    group = _last_at_or_before(idx.get("worker_group_started", {}).get(key, []), step["t"], since)
    ready = _t(start) if group is None else _t(group)
    wstart = _first_at_or_after(idx.get("worker_start", {}).get(key, []), ready)
    return {
        **row,
        "recovered_fit": key[0], "recovered_attempt": key[1],
        "restored_step": (wstart or {}).get("restored_step"),
        "t_first_step": step["t"],
        "teardown_s": span(since, _t(start)),
        "scheduling_s": span(_t(start), _t(group)),
        "restore_s": span(_t(group), _t(wstart)),
        "first_step_s": span(_t(wstart), step["t"]),
        "recovery_s": span(t0, step["t"]),
    }


def _outage_fields(outage: Optional[Event]) -> Event:
    if outage is None:
        return {}
    first = outage["failures"][0] if outage["failures"] else {}
    return {"attempt": outage["attempt"], "state": outage["state"], "budget": first.get("budget"),
            "decision": first.get("decision"), "error_type": first.get("error_type")}


def _fault_outage(found: List[Event], fault: Event) -> Optional[Event]:
    """The first outage of the fault's fit that opened after it was asked for.

    Matched from `t_requested`, not `t_done`: an injector may confirm a kill
    after the controller already noticed it (the detection is then negative).
    A fault that stopped nothing claims the next outage, whatever caused it;
    the `fault_kind` column tells which faults are latent.
    """
    asked = _first_time(fault, "t_requested", "t_done")
    return next((o for o in found if o["fit_index"] == fault["fit_index"] and o["t"] >= asked), None)


def _origin(idx, outage: Event) -> float:
    """When an outage with no injected fault began: the first worker_error of
    the failed attempt, else the controller's own state change (detection 0)."""
    errors = idx.get("worker_error", {}).get((outage["fit_index"], outage["attempt"]), [])
    return min([e["t"] for e in errors if e["t"] <= outage["t"]] + [outage["t"]])


def recovery_table(events: Iterable[Event]) -> pd.DataFrame:
    """One row per injected fault, plus one per outage with a failure decision
    that no fault claims (every outage of a run with no faults).

    A fault starts at `fault_injected.t_done`; an outage on its own at its
    first worker_error. Parts: detection (to the first disrupting state
    change), teardown (to the attempt_start of the recovering attempt),
    scheduling (to worker_group_started), restore (to its first worker_start),
    first step (to its first step); recovery_s is their sum.
    """
    ev = annotate(events)
    found, idx = outages(ev), _index(ev)
    steps = sorted((e for e in ev if e.get("kind") == "step" and _key(e)), key=lambda e: e["t"])
    rows, claimed = [], set()
    for f in (e for e in ev if e.get("kind") == "fault_injected"):
        outage = _fault_outage(found, f)
        if outage is not None:
            claimed.add(outage["seq"])
        t0 = _first_time(f, "t_done")
        rows.append({"source": "fault", "fault": f.get("fault"), "fault_kind": f.get("fault_kind"),
                     "fit_index": f["fit_index"], "t0": t0, "t_requested": f.get("t_requested"),
                     **_outage_fields(outage), **_recovery(idx, steps, t0, f["fit_index"], outage)})
    for o in found:
        if o["failures"] and o["seq"] not in claimed:
            t0 = _origin(idx, o)
            rows.append({"source": "failure", "fit_index": o["fit_index"], "t0": t0,
                         **_outage_fields(o), **_recovery(idx, steps, t0, o["fit_index"], o)})
    table = pd.DataFrame(rows, columns=RECOVERY_COLUMNS)
    numeric = [c for c in RECOVERY_COLUMNS if c not in TEXT_COLUMNS]
    table[numeric] = table[numeric].apply(pd.to_numeric)
    return table.sort_values("t0", ignore_index=True)


# ------------------------------------------------------------ steps, lost work
def step_table(events: Iterable[Event]) -> pd.DataFrame:
    """Steps as the worker group did them: one row per (fit, attempt, step).

    A step ends when its last rank recorded it and begins when the attempt's
    previous step ended. The first step of an attempt has no `seconds`: its
    time is start-up (restore, warm-up, compilation), which Meta's ETTR and
    Google's goodput both count as unproductive. `lost` marks a step that a
    later attempt computed again, i.e. work thrown away by a rollback.
    """
    rows = [(e["fit_index"], e["attempt"], int(e["step"]), e["t"])
            for e in annotate(events)
            if e.get("kind") == "step" and _key(e) and e.get("step") is not None]
    if not rows:
        return pd.DataFrame(columns=STEP_COLUMNS)
    df = pd.DataFrame(rows, columns=["fit_index", "attempt", "step", "t_end"])
    table = df.groupby(["fit_index", "attempt", "step"], as_index=False)["t_end"].max()
    table["t_begin"] = table.groupby(["fit_index", "attempt"])["t_end"].shift()
    table["seconds"] = table["t_end"] - table["t_begin"]
    order = {k: i for i, k in enumerate(sorted(set(zip(table["fit_index"], table["attempt"]))))}
    rank = pd.Series([order[k] for k in zip(table["fit_index"], table["attempt"])], index=table.index)
    table["lost"] = rank < rank.groupby(table["step"]).transform("max")
    return table[STEP_COLUMNS]


def lost_work(events: Iterable[Event]) -> Dict[str, Any]:
    """Steps computed and thrown away (computed again by a later attempt), and
    their seconds. Work of a step cut off by the failure is not a step and is
    not counted; it is part of the recovery time instead."""
    steps = step_table(events)
    lost = steps[steps["lost"].astype(bool)]
    return {"lost_steps": int(len(lost)), "lost_step_s": round(float(lost["seconds"].sum()), 6)}


def wall_time(events: Iterable[Event]) -> Optional[float]:
    """From the first run_start to the last run_end (any events if those are
    missing): the time the job held the cluster, gaps between fits included."""
    ev = list(events)
    starts = [e["t"] for e in ev if e.get("kind") == "run_start"] or [e["t"] for e in ev]
    ends = [e["t"] for e in ev if e.get("kind") == "run_end"] or [e["t"] for e in ev]
    return span(min(starts), max(ends)) if starts else None


def ettr(events: Iterable[Event]) -> Dict[str, Any]:
    """Effective training time ratio: productive step time over wall time.

    Meta's ETTR (Kokolis et al., "Revisiting Reliability in Large-Scale Machine
    Learning Research Clusters", HPCA 2025, arXiv:2410.21680) is productive
    runtime over the wall-clock time available to the job, where productive
    runtime leaves out retraining from the last checkpoint and initialization
    after restarts. Google's ML Productivity Goodput (Google Cloud blog,
    "Introducing ML Productivity Goodput", April 2024; the ml-goodput-measurement
    library) is the product of scheduling, runtime and program goodput; its
    runtime goodput is the same ratio, time making preserved forward progress
    over time allocated, with start-up and disruption recovery as badput.

    Here productive time is the `seconds` of the steps not lost (step_table),
    and wall time is `wall_time`.
    """
    ev = list(events)
    steps = step_table(ev)
    productive = round(float(steps.loc[~steps["lost"].astype(bool), "seconds"].sum()), 6)
    wall = wall_time(ev)
    return {"productive_s": productive, "wall_time_s": wall,
            "ettr": round(productive / wall, 6) if wall else None}


# ---------------------------------------------------------------------- budgets
def budget_use(events: Iterable[Event], failure_config: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """Failures charged per budget class against the configured limit.

    Ray counts failures per controller, i.e. per fit(): `left` is the limit
    less the retries of the fit that used the most (None when unlimited, -1,
    or not configured); `exhausted` when a failure of the class was raised.
    """
    config = failure_config or {}
    failures = [e for e in annotate(events) if e.get("kind") == "failure"]
    out = {}
    for cls, limit_key in LIMITS.items():
        charged = [e for e in failures if e.get("budget") == cls]
        retries = Counter(e["fit_index"] for e in charged if e.get("decision") == "RETRY")
        limit = config.get(limit_key) if limit_key else None
        out[cls] = {
            "limit": limit,
            "charged": len(charged),
            "retries": sum(retries.values()),
            "left": limit - max(retries.values(), default=0) if limit is not None and limit >= 0 else None,
            "exhausted": any(e.get("decision") == "RAISE" for e in charged),
        }
    return out


# -------------------------------------------------------------------------- run
def _failure_config(events: List[Event], summary: Dict[str, Any]) -> Dict[str, Any]:
    if summary.get("failure_config"):
        return summary["failure_config"]
    return next((e.get("failure_config") or {} for e in events if e.get("kind") == "run_start"), {})


def _mean(values: List[float]) -> Optional[float]:
    return round(sum(values) / len(values), 6) if values else None


def run_metrics(events: Iterable[Event], summary: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """The metrics of one run, as one JSON-able dict.

    `summary` (summary.json) supplies the failure limits; the history's
    run_start does when it has none. Lists hold one value per recovery_table
    row that has it; the means ignore rows without a value.
    """
    ev = annotate(events)
    summary = summary or {}
    table = recovery_table(ev)
    values = {c: [float(v) for v in table[c].dropna()] for c in (*PARTS, "recovery_s")}
    return {
        "fits": len({e["fit_index"] for e in ev if e.get("kind") == "run_start"}),
        "attempts": len({_key(e) for e in ev if e.get("kind") == "attempt_start"}),
        "failures": sum(e.get("kind") == "failure" for e in ev),
        "faults_injected": sum(e.get("kind") == "fault_injected" for e in ev),
        "last_step": max((int(e["step"]) for e in ev
                          if e.get("kind") == "step" and e.get("step") is not None), default=0),
        "detection_s": values["detection_s"],
        "recovery_s": values["recovery_s"],
        "mean_recovery_s": _mean(values["recovery_s"]),
        "max_recovery_s": max(values["recovery_s"], default=None),
        "recovery_parts_mean_s": {p: _mean(values[p]) for p in PARTS},
        **lost_work(ev),
        **ettr(ev),
        "budgets": budget_use(ev, _failure_config(ev, summary)),
    }
