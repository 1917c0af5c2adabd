"""A history as a Chrome trace (the JSON that Perfetto and chrome://tracing open).

People already read Ray timelines in these viewers, so one run's history goes
there too: a process per node (plus the controller and the harness), a thread
per worker process, a span per attempt, per step and per controller state, and
faults, failures and checkpoints as instants. Times are microseconds from the
run's first event; every event keeps its `seq` so a span leads back to the line
of `history.jsonl` it came from.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterable, List, Optional

from ftharness.history.records import read_history

Event = Dict[str, Any]

HARNESS_PID, CONTROLLER_PID, FIRST_NODE_PID = 1, 2, 10
INSTANT_KINDS = ("checkpoint_written", "report", "restore", "worker_error")
GLOBAL_KINDS = ("fault_injected", "fault_action", "fault_skipped", "failure", "landing_hold")


def chrome_trace(events: Iterable[Event]) -> Dict[str, Any]:
    """{"traceEvents": [...]} for the events (pure)."""
    events = sorted((e for e in events if isinstance(e.get("t"), (int, float))), key=lambda e: e.get("seq", 0))
    if not events:
        return {"traceEvents": [], "displayTimeUnit": "ms"}
    t0 = min(e["t"] for e in events)
    out: List[Event] = []
    nodes: Dict[str, int] = {}

    def us(t: float) -> float:
        return round((t - t0) * 1e6, 1)

    def node_pid(node_id: Optional[str]) -> int:
        if node_id not in nodes:
            nodes[node_id] = FIRST_NODE_PID + len(nodes)
            out.append(_meta("process_name", nodes[node_id], 0, f"node {str(node_id)[:8]}"))
        return nodes[node_id]

    out.append(_meta("process_name", HARNESS_PID, 0, "harness (fit, faults)"))
    out.append(_meta("process_name", CONTROLLER_PID, 0, "Train controller"))
    _worker_spans(events, out, us, node_pid)
    _controller_spans(events, out, us)
    _fit_spans(events, out, us)
    for e in events:
        if e["kind"] in GLOBAL_KINDS:
            out.append({"name": _label(e), "ph": "i", "s": "g", "ts": us(e["t"]), "pid": HARNESS_PID,
                        "tid": 0, "cat": e["kind"], "args": _args(e)})
        elif e["kind"] in INSTANT_KINDS and e.get("pid") is not None:
            out.append({"name": _label(e), "ph": "i", "s": "t", "ts": us(e["t"]), "pid": node_pid(e.get("node_id")),
                        "tid": e["pid"], "cat": e["kind"], "args": _args(e)})
    return {"traceEvents": out, "displayTimeUnit": "ms"}


def _meta(name: str, pid: int, tid: int, value: str) -> Event:
    return {"name": name, "ph": "M", "pid": pid, "tid": tid, "args": {"name": value}}


def _span(name: str, cat: str, begin: float, end: float, pid: int, tid: int, args: Event) -> Event:
    return {"name": name, "ph": "X", "cat": cat, "ts": begin, "dur": max(0.0, round(end - begin, 1)),
            "pid": pid, "tid": tid, "args": args}


def _worker_spans(events: List[Event], out: List[Event], us, node_pid) -> None:
    """One thread per worker process: its attempt, and each step from the previous one."""
    by_pid: Dict[int, List[Event]] = {}
    for e in events:
        if e.get("source") == "worker" and e.get("pid") is not None:
            by_pid.setdefault(e["pid"], []).append(e)
    for pid, mine in by_pid.items():
        first, last = mine[0], mine[-1]
        proc = node_pid(first.get("node_id"))
        out.append(_meta("thread_name", proc, pid, f"rank {first.get('rank')} pid {pid}"))
        ended = "" if last["kind"] == "worker_end" else " (no worker_end: killed or cut off)"
        out.append(_span(f"attempt {first.get('attempt')} rank {first.get('rank')}{ended}", "attempt",
                         us(first["t"]), us(last["t"]), proc, pid,
                         {"attempt_id": first.get("attempt_id"), "fit_index": first.get("fit_index"),
                          "restored_step": first.get("restored_step"), "first_seq": first.get("seq"),
                          "last_seq": last.get("seq")}))
        since = first["t"]
        for e in mine:
            if e["kind"] == "step":
                out.append(_span(f"step {e.get('step')}", "step", us(since), us(e["t"]), proc, pid,
                                 {"seq": e.get("seq"), "loss": e.get("loss"), "n_rows": e.get("n_rows")}))
                since = e["t"]


def _controller_spans(events: List[Event], out: List[Event], us) -> None:
    states = [e for e in events if e["kind"] == "controller_state"]
    for a, b in zip(states, states[1:] + [None]):
        end = b["t"] if b is not None and b.get("fit_index") == a.get("fit_index") else events[-1]["t"]
        out.append(_span(str(a.get("cur")), "controller_state", us(a["t"]), us(end), CONTROLLER_PID,
                         a.get("fit_index") or 1, _args(a)))


def _fit_spans(events: List[Event], out: List[Event], us) -> None:
    start = None
    for e in events:
        if e["kind"] == "run_start":
            start = e
        elif e["kind"] == "run_end" and start is not None:
            out.append(_span(f"fit {e.get('fit_index')}: {e.get('outcome')}", "fit", us(start["t"]), us(e["t"]),
                             HARNESS_PID, 1, {"error_type": e.get("error_type"), "seq": e.get("seq")}))
            start = None


def _label(e: Event) -> str:
    k = e["kind"]
    if k.startswith("fault"):
        return f"{k}: {e.get('fault_kind')} #{e.get('fault')}"
    if k == "failure":
        return f"failure: {e.get('error_type')} -> {e.get('budget')} {e.get('decision')}"
    if k in ("checkpoint_written", "report"):
        return f"{k} step {e.get('step')}"
    return k


def _args(e: Event) -> Event:
    skip = {"t", "kind", "run", "emitter", "eseq", "rows", "workers", "metrics", "workload", "failure_config"}
    return {k: (v if isinstance(v, (int, float, str, bool)) or v is None else json.dumps(v, default=str)[:500])
            for k, v in e.items() if k not in skip}


def write_trace(results: str, out: Optional[str] = None) -> str:
    """Write RESULTS/trace.json (or `out`) from RESULTS/history.jsonl; returns its path."""
    read = read_history(results)
    path = out or os.path.join(results, "trace.json")
    # never through a symlink planted in a results folder: O_NOFOLLOW refuses one (ELOOP)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w") as f:
        json.dump(chrome_trace(read.events), f)
    return path
