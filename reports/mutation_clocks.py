"""A history's processes and their clocks, as the self-consistent operators and the controls move them.

A part of the mutation engine: one process's clock moved by a constant (`_shifted`), events placed
into a history by their clock readings as an appending recorder would have (`_merge`), whether a set
of moves passes another event (`_set_in_place`), and a history's emitters, nodes and run id. Pure.
"""

from __future__ import annotations

import bisect
import copy
from collections import defaultdict
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ftharness.reports.mutation_parts import TIME_FIELDS, Event, _leaves, _name, _set


def _t(e: Event) -> Optional[float]:
    v = e.get("t")
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _shifted(e: Event, d: float, deadlines: bool = True) -> Event:
    """A copy of `e` with every clock reading it holds (t, t_done, t_requested, at any depth; its
    deadlines in ms with `deadlines`) moved by `d` seconds: one process's clock moved by a constant."""
    out = copy.deepcopy(e)
    for path, v in list(_leaves(out)):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            continue
        if _name(path) in TIME_FIELDS:
            _set(out, path, v + d)
        elif deadlines and _name(path) == "deadline_ms" and isinstance(v, int):
            _set(out, path, v + int(round(d * 1000)))
    return out


def _merge(base: List[Event], ins: List[Event]) -> List[Event]:
    """`ins` placed into `base` by their clock readings, as a recorder that appends in arrival order
    would have written them: each event of `ins` goes before the first event of `base` that is later
    than it; the order within `base`, and each emitter's order within `ins`, is kept (so a process
    whose clock runs forwards still runs forwards in the file)."""
    times = [_t(e) for e in base]

    def pos(t: Optional[float]) -> int:
        if t is None:
            return len(base)
        for j, bt in enumerate(times):
            if bt is not None and bt > t:
                return j
        return len(base)

    placed: List[Tuple[int, int, Event]] = []
    last: Dict[Any, int] = {}
    for n, e in enumerate(ins):
        p = pos(_t(e))
        em = e.get("emitter")
        p = max(p, last.get(em, 0))
        last[em] = p
        placed.append((p, n, e))
    placed.sort(key=lambda x: (x[0], x[1]))
    out: List[Event] = []
    k = 0
    for j, b in enumerate(base):
        while k < len(placed) and placed[k][0] <= j:
            out.append(placed[k][2])
            k += 1
        out.append(b)
    out.extend(p[2] for p in placed[k:])
    return out


def _set_in_place(others: List[float], moves: Sequence[Tuple[float, float]]) -> bool:
    """Whether moving a set of clock readings (old -> new) passes no other event's reading (`others`,
    sorted): every order relation with the rest of the history stays; only durations change."""
    return all(bisect.bisect_left(others, a) == bisect.bisect_left(others, b)
               and bisect.bisect_right(others, a) == bisect.bisect_right(others, b) for a, b in moves)


def _emitters(events: List[Event]) -> List[Any]:
    return list(dict.fromkeys(e.get("emitter") for e in events if e.get("emitter")))


def _source_of(events: List[Event]) -> str:
    return next((str(e.get("source")) for e in events if e.get("source")), "?")


def _run_id(events: List[Event]) -> Any:
    return next((e.get("run") for e in events if e.get("kind") == "run_start"),
                next((e.get("run") for e in events if e.get("run")), None))


def _node_emitters(events: List[Event]) -> Dict[Any, List[Any]]:
    """node id -> the emitters whose events carry that node_id (a node's processes), in order."""
    out: Dict[Any, Dict[Any, None]] = defaultdict(dict)
    for e in events:
        if e.get("emitter") and isinstance(e.get("node_id"), str):
            out[e["node_id"]][e["emitter"]] = None
    return {n: list(ems) for n, ems in out.items()}
