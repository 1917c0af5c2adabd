"""The self-consistent operators that move events in time: shifts, splices, moves across a boundary.

A part of the mutation engine (`consistent_mutants` in reports/mutation.py uses them): every event of
one process or node shifted by a constant, events of another recorded run spliced in, an event (alone
or with its neighbours) moved across an attempt's start, a group's shutdown or its own death, each
placed by its new time so that every process's clock still runs forwards. Pure.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from ftharness.reports.mutation_clocks import (_emitters, _merge, _node_emitters, _run_id, _set_in_place, _shifted,
                                               _source_of, _t)
from ftharness.reports.mutation_parts import INFORMATIONAL, TIME_SHIFTS, Event, Mutant


#: seconds the move-across operator puts an event past its boundary (more than TOL_CROSS, 2 s: a
#: correct run on hosts whose clocks differ by up to that much records no such order)
ACROSS_S = (3.0, 8.0, 30.0)
#: seconds the move-across operator moves an event together with the rest of its process
ACROSS_TAIL_S = (8.0,)
#: seconds the controller may record a worker group after its workers started running (the judge's
#: history.causal.TOL_GROUP: a busy controller records the group late)
GROUP_LAG_S = 10.0
#: seconds two processes' clock readings may disagree (the judge's history.causal.TOL_CROSS: hosts' clocks)
CROSS_TOL_S = 2.0
#: how many events of its process the tail move takes along
TAIL_EVENTS = 3
#: how many other recorded runs each history takes spliced events from
SPLICE_OTHERS = 3


# -- shift every event of one process (or of one node) by a constant
def _shift_group(source: str, operator: str, kind: str, label: str, events: List[Event],
                 members: set) -> Iterator[Mutant]:
    mine = [e for e in events if e.get("emitter") in members]
    rest = [e for e in events if e.get("emitter") not in members]
    others = sorted(t for t in map(_t, rest) if t is not None)
    for d in TIME_SHIFTS:
        moved = [_shifted(e, d) for e in mine]
        out = _merge(copy.deepcopy(rest), moved)
        moves = [(t, t + d) for t in map(_t, mine) if t is not None]
        rule = ("informational-kind" if all(e.get("kind") in INFORMATIONAL for e in mine)
                else "in-place" if _set_in_place(others, moves) else None)
        yield Mutant(source, operator, kind, "t", f"{label}{d:+g}s", out, equivalent=rule)


def _shifts(source: str, events: List[Event]) -> Iterator[Mutant]:
    """Every event of one process moved in time by a constant (its own order kept), and every event of
    one node's processes likewise (nodes with one process are the process shift already)."""
    for em in _emitters(events):
        mine = [e for e in events if e.get("emitter") == em]
        yield from _shift_group(source, "shift-process", f"process:{_source_of(mine)}", str(em), events, {em})
    for node, ems in _node_emitters(events).items():
        if len(ems) > 1:
            yield from _shift_group(source, "shift-node", "node", str(node)[:12], events, set(ems))


# -- splice events of another recorded run
def _splices(source: str, events: List[Event], others: Sequence[Tuple[str, List[Event]]]) -> Iterator[Mutant]:
    """Events of another recorded run inserted into this one at the same point of the run (their
    clocks moved by the difference of the two runs' starts, so each spliced process runs forwards),
    with their run id kept (`splice`) or rewritten to this run's (`splice-as-own`): every spliced
    process whole, and one event of each kind. Emitter names that collide get a suffix, and the
    numbering is made contiguous when written (`write` renumbers)."""
    t0 = next((t for t in map(_t, events) if t is not None), 0.0)
    mine = set(_emitters(events))
    run_id = _run_id(events)
    for name, theirs in list(others)[:SPLICE_OTHERS]:
        if _run_id(theirs) == run_id:
            continue
        off = t0 - next((t for t in map(_t, theirs) if t is not None), 0.0)
        rename = {em: (f"{em}-spliced" if em in mine else em) for em in _emitters(theirs)}

        def bring(evs: List[Event], own: bool) -> List[Event]:
            out = []
            for e in evs:
                e = _shifted(e, off)
                if e.get("emitter") in rename:
                    e["emitter"] = rename[e["emitter"]]
                if own:
                    e["run"] = run_id
                out.append(e)
            return out

        for em in _emitters(theirs):
            evs = [e for e in theirs if e.get("emitter") == em]
            for own in (False, True):
                out = _merge(copy.deepcopy(events), bring(evs, own))
                yield Mutant(source, "splice-as-own" if own else "splice", f"process:{_source_of(evs)}", "*",
                             f"{name}:{em}", out,
                             equivalent="informational-kind" if own and all(
                                 e.get("kind") in INFORMATIONAL for e in evs) else None)
        by_kind: Dict[str, List[int]] = defaultdict(list)
        for i, e in enumerate(theirs):
            by_kind[e.get("kind", "?")].append(i)
        for kind, idx in by_kind.items():
            i = idx[len(idx) // 2]
            for own in (False, True):
                out = _merge(copy.deepcopy(events), bring([theirs[i]], own))
                yield Mutant(source, "splice-as-own" if own else "splice", kind, "*", f"{name}#{i}", out,
                             equivalent="informational-kind" if own and kind in INFORMATIONAL else None)


# -- move an event across an attempt boundary, a shutdown or its own death, clocks kept monotonic
def _boundaries(events: List[Event]) -> Dict[Any, List[Tuple[str, int, int]]]:
    """emitter -> (label, boundary event index, +1 later / -1 earlier): the events a process's event
    must not be moved across. A worker of attempt A: its group's shutdown, the next attempt's start
    and the fault that killed it or its node (later); A's start, A's group and the previous attempt's
    shutdown (earlier). A controller's failure: the next attempt's start (later) and the fault before
    it (earlier); its registration: its attempt's shutdown (later)."""
    out: Dict[Any, List[Tuple[str, int, int]]] = defaultdict(list)
    starts = [i for i, e in enumerate(events) if e.get("kind") == "attempt_start"]
    groups = [i for i, e in enumerate(events) if e.get("kind") == "worker_group_started"]
    downs = [i for i, e in enumerate(events) if e.get("kind") == "worker_group_shutdown"]
    faults = [i for i, e in enumerate(events) if e.get("kind") in ("fault_injected", "fault_action")]

    def t(i: int) -> float:
        return _t(events[i]) or 0.0

    def kills(i: int, pid: Any, node: Any) -> bool:
        e = events[i]
        hit = e.get("target_hit") if isinstance(e.get("target_hit"), dict) else {}
        detail = e.get("detail") if isinstance(e.get("detail"), dict) else {}
        how = str(hit.get("how") or detail.get("how") or "")
        if e.get("kind") == "fault_injected" and pid is not None and hit.get("pid") == pid and "KILL" in how:
            return True
        node_hit = hit.get("node_id") if e.get("kind") == "fault_injected" else detail.get("node_id")
        return node is not None and node_hit == node and ("remove" in how or "SIGKILL" in how)

    for em in _emitters(events):
        idx = [i for i, e in enumerate(events) if e.get("emitter") == em]
        first = events[idx[0]]
        src = first.get("source")
        if src == "worker":
            a, pid, node = first.get("attempt_id"), first.get("pid"), first.get("node_id")
            t_first, t_last = t(idx[0]), t(idx[-1])
            out[em] += [("worker_group_shutdown", i, +1) for i in downs if events[i].get("attempt_id") == a][:1]
            nxt = next((i for i in starts if events[i].get("attempt_id") != a and t(i) > t_first), None)
            if nxt is not None:
                out[em].append(("next attempt_start", nxt, +1))
            death = next((i for i in faults if kills(i, pid, node) and t(i) <= t_last + 600), None)
            if death is not None:
                out[em].append(("death", death, +1))
            out[em] += [("attempt_start", i, -1) for i in starts if events[i].get("attempt_id") == a][:1]
            out[em] += [("worker_group_started", i, -1) for i in groups if events[i].get("attempt_id") == a][:1]
            before = [i for i in downs if events[i].get("attempt_id") != a and t(i) < t_first]
            if before:
                out[em].append(("previous worker_group_shutdown", before[-1], -1))
    return out


def _lag_rule(events: List[Event], i: int, label: str, side: int, d: float, new_t: float) -> Optional[str]:
    """The equivalence rule of a move across a boundary, if any: a worker's start (alone, not its steps)
    moved before its group's record by less than GROUP_LAG_S, still after its attempt's start
    ("group-lag")."""
    e = events[i]
    if label != "worker_group_started" or side > 0 or d >= GROUP_LAG_S or e.get("kind") != "worker_start":
        return None
    start = next((_t(x) for x in events if x.get("kind") == "attempt_start"
                  and x.get("attempt_id") == e.get("attempt_id")), None)
    return "group-lag" if start is not None and new_t >= start - CROSS_TOL_S else None


def _moves(source: str, events: List[Event]) -> Iterator[Mutant]:
    """A process's event nearest to a boundary moved to the boundary's other side by `ACROSS_S`
    (placed in the file by its new time, so its process's clock still runs forwards), alone
    (`move-across`) or with every later (earlier) event of its process (`move-across-tail`)."""
    bounds = _boundaries(events)

    def emit(i: int, label: str, b: int, side: int, idx: List[int]) -> Iterator[Mutant]:
        e, tb = events[i], _t(events[b])
        te = _t(e)
        if tb is None or te is None:
            return
        for d in ACROSS_S:
            delta = tb + side * d - te
            rest = events[:i] + events[i + 1:]
            out = _merge(copy.deepcopy(rest), [_shifted(e, delta, deadlines=False)])
            yield Mutant(source, "move-across", e.get("kind", "?"), label, f"#{i}{side * d:+g}s past #{b}", out,
                         equivalent=_lag_rule(events, i, label, side, d, te + delta))
        # with its neighbours: the last (first) TAIL_EVENTS events of its process on this side, moved
        # together so that the nearest of them lands past the boundary by the same distance
        near = [j for j in idx if ((_t(events[j]) or 0.0) < tb if side > 0 else (_t(events[j]) or 0.0) > tb)]
        block = near[-TAIL_EVENTS:] if side > 0 else near[:TAIL_EVENTS]
        if len(block) > 1:
            anchor = _t(events[block[0] if side > 0 else block[-1]])
            for d in ACROSS_TAIL_S:
                if anchor is None:
                    break
                delta = tb + side * d - anchor
                moved = set(block)
                keep = [x for j, x in enumerate(events) if j not in moved]
                out = _merge(copy.deepcopy(keep), [_shifted(events[j], delta, deadlines=False) for j in block])
                yield Mutant(source, "move-across-tail", e.get("kind", "?"), label,
                             f"#{block[0]}..#{block[-1]}{side * d:+g}s past #{b}", out)

    for em, bs in bounds.items():
        idx = [i for i, e in enumerate(events) if e.get("emitter") == em]
        for label, b, side in bs:
            tb = _t(events[b])
            if tb is None:
                continue
            if side > 0:
                cand = [i for i in idx if (_t(events[i]) or 0.0) < tb]
                if cand:
                    yield from emit(cand[-1], label, b, side, idx)
            else:
                cand = [i for i in idx if (_t(events[i]) or 0.0) > tb]
                if cand:
                    yield from emit(cand[0], label, b, side, idx)
    # the controller's decisions: a failure after the next attempt started, or before its fault was done;
    # a registration after its attempt's group was shut down
    starts = [i for i, e in enumerate(events) if e.get("kind") == "attempt_start"]
    for i, e in enumerate(events):
        if e.get("source") != "controller" or _t(e) is None:
            continue
        if e.get("kind") == "failure":
            nxt = next((j for j in starts if j > i and events[j].get("emitter") == e.get("emitter")), None)
            if nxt is not None:
                yield from _move_one(source, events, i, "next attempt_start", nxt, +1)
            fault = next((j for j in range(i - 1, -1, -1) if events[j].get("kind") in ("fault_injected", "fault_action")
                          and _t(events[j]) is not None and _t(events[j]) <= _t(e)), None)
            if fault is not None:
                yield from _move_one(source, events, i, "fault", fault, -1)
        elif e.get("kind") == "checkpoint_registered":
            down = next((j for j, x in enumerate(events) if j > i and x.get("kind") == "worker_group_shutdown"
                         and x.get("attempt_id") == e.get("attempt_id")), None)
            last = down is not None and not any(x.get("kind") == "checkpoint_registered"
                                                and x.get("attempt_id") == e.get("attempt_id")
                                                for x in events[i + 1:down])
            if last:   # the attempt's last registration (the nearest to its shutdown)
                yield from _move_one(source, events, i, "worker_group_shutdown", down, +1)


def _move_one(source: str, events: List[Event], i: int, label: str, b: int, side: int) -> Iterator[Mutant]:
    e, tb, te = events[i], _t(events[b]), _t(events[i])
    if tb is None or te is None:
        return
    for d in ACROSS_S:
        rest = events[:i] + events[i + 1:]
        out = _merge(copy.deepcopy(rest), [_shifted(e, tb + side * d - te, deadlines=False)])
        yield Mutant(source, "move-across", e.get("kind", "?"), label, f"#{i}{side * d:+g}s past #{b}", out)
