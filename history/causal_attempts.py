"""Rules of the causal model about attempts and their worker groups: each group as recorded (its
ranks, its size, after its attempt started), every worker event from a process of its attempt's
group and not after that process or its node was killed, the ranks of one attempt stepping
together, and every restart decided by a failure.

Reading the groups builds what the later rules look processes up in (`m.groups`, `m.process`,
`m.attempt_t`, `m.next_attempt_t`). Split out of history/causal.py, which runs these steps with
the others: each function takes the model builder (`_Builder` of causal.py) and adds its
findings to `b.m`. Pure.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from ftharness.history.tolerances import RECORDS, SYSTEM, TOL_CROSS, num as _num

#: seconds a worker group may be recorded after its ranks started stepping (a busy controller)
TOL_GROUP = 10.0


@dataclass
class Group:
    attempt_id: str
    t: float
    world_size: Optional[int]
    workers: Dict[Any, Tuple[Any, Any]]   # rank -> (pid, node_id)


# -- worker groups and processes
def groups(b) -> None:
    m = b.m
    for e in b.events:
        kind, aid, t = e.get("kind"), e.get("attempt_id"), _num(e.get("t"))
        if kind == "attempt_start" and isinstance(aid, str) and t is not None:
            if aid not in m.attempt_t:
                for prev in m.attempt_t:
                    m.next_attempt_t.setdefault(prev, t)
                m.attempt_t[aid] = t
        if kind == "worker_group_started" and isinstance(aid, str) and t is not None:
            workers: Dict[Any, Tuple[Any, Any]] = {}
            for w in e.get("workers") or []:
                if not isinstance(w, dict):
                    continue
                if w.get("rank") in workers:
                    m.add(SYSTEM, "group", f"attempt {aid[:12]}'s group lists rank {w.get('rank')} twice")
                workers[w.get("rank")] = (w.get("pid"), w.get("node_id"))
                if w.get("pid") is not None:
                    m.process[w.get("pid")] = (aid, w.get("rank"), w.get("node_id"))
            if aid in m.groups:
                m.add(RECORDS, "group", f"attempt {aid[:12]}'s worker group is recorded twice")
            ws = e.get("world_size")
            if isinstance(ws, int) and workers and ws != len(workers):
                m.add(SYSTEM, "group", f"attempt {aid[:12]}'s group has {len(workers)} workers, world size {ws}")
            m.groups[aid] = Group(aid, t, ws if isinstance(ws, int) else None, workers)
            start = m.attempt_t.get(aid)
            if start is not None and t < start - TOL_CROSS:
                m.add(SYSTEM, "attempt-order", f"attempt {aid[:12]}'s group started {start - t:.1f} s "
                                               f"before the attempt did")


def workers(b) -> None:
    """Every worker event comes from a process of its attempt's group, as that rank, on that
    node, after the attempt started, and not after the process (or its node) was killed."""
    m = b.m
    seen_first: Dict[Tuple[str, Any], float] = {}
    for e in b._worker_events():
        aid, pid, rank, t = e.get("attempt_id"), e.get("pid"), e.get("rank"), _num(e.get("t"))
        what = f"{e.get('kind')} seq {e.get('seq')} (rank {rank}, pid {pid})"
        group = m.groups.get(aid) if isinstance(aid, str) else None
        if group is not None and group.workers:
            member = group.workers.get(rank)
            if member is None:
                m.add(SYSTEM, "process", f"{what}: attempt {str(aid)[:12]}'s group has no rank {rank}")
            elif pid is not None and member[0] is not None and member[0] != pid:
                owner = m.process.get(pid)
                m.add(SYSTEM, "process", f"{what}: rank {rank} of attempt {str(aid)[:12]} is pid {member[0]}"
                      + (f"; pid {pid} was rank {owner[1]} of attempt {str(owner[0])[:12]}" if owner else
                         "; pid {pid} is in no worker group"))
            elif e.get("node_id") is not None and member[1] is not None and member[1] != e.get("node_id"):
                m.add(SYSTEM, "process", f"{what}: says node {str(e.get('node_id'))[:8]}, its group placed it "
                                         f"on {str(member[1])[:8]}")
            ws = e.get("world_size")
            if group.world_size is not None and isinstance(ws, int) and ws != group.world_size:
                m.add(SYSTEM, "process", f"{what}: world size {ws}, its group's is {group.world_size}")
        elif isinstance(aid, str) and aid in m.attempt_t and pid is not None and m.process:
            owner = m.process.get(pid)
            if owner is None:
                m.add(SYSTEM, "process", f"{what}: pid {pid} is in no worker group", absence=True)
        start = m.attempt_t.get(aid) if isinstance(aid, str) else None
        if start is not None and t is not None and t < start - TOL_CROSS:
            m.add(SYSTEM, "attempt-order", f"{what}: {start - t:.1f} s before its attempt started")
        if t is not None:
            death = m.pid_deaths.get(pid)
            if death is not None and t > death[0] + TOL_CROSS:   # (the injector's clock and the worker's)
                m.add(SYSTEM, "after-death", f"{what}: {t - death[0]:.1f} s after fault "
                                             f"{death[1].get('fault')} killed pid {pid}")
            node = e.get("node_id")
            ndeath = m.node_deaths.get(node) if node is not None else None
            if ndeath is not None and t > ndeath[0] + TOL_CROSS:
                m.add(SYSTEM, "after-death", f"{what}: {t - ndeath[0]:.1f} s after node {str(node)[:8]} was "
                                             f"removed (fault {ndeath[1].get('fault')})")
        if e.get("kind") == "step" and isinstance(aid, str) and t is not None:
            seen_first.setdefault((aid, rank), t)
            if group is not None and group.t > t + TOL_GROUP:
                m.add(RECORDS, "attempt-order", f"attempt {aid[:12]}'s group was recorded {group.t - t:.1f} s "
                                                f"after rank {rank} stepped")
                group.t = t   # said once
    if b.small:
        lockstep(b)


def lockstep(b) -> None:
    """The ranks of one attempt step together (every step is an all-reduce): the same steps,
    but for the last one of an attempt cut off by a failure; and one process's steps go up by one."""
    m = b.m
    per: Dict[Tuple[str, Any], List[int]] = defaultdict(list)
    emitted: Dict[Any, List[Tuple[Any, Any]]] = defaultdict(list)
    for e in b.h.events:
        if e.get("kind") != "step" or not isinstance(e.get("attempt_id"), str) or type(e.get("step")) is not int:
            continue
        per[(e["attempt_id"], e.get("rank"))].append(e["step"])
        if e.get("emitter") is not None:
            emitted[e["emitter"]].append((e.get("attempt_id"), e.get("rank")))
    for em, who in emitted.items():
        if len(set(who)) > 1:
            m.add(RECORDS, "emitter", f"one process ({em}) recorded steps as {len(set(who))} different "
                                      f"(attempt, rank) pairs")
    by_attempt: Dict[str, Dict[Any, List[int]]] = defaultdict(dict)
    for (aid, rank), steps in per.items():
        by_attempt[aid][rank] = steps
        for a, nxt in zip(steps, steps[1:]):
            if nxt != a + 1:
                m.add(SYSTEM, "step-order", f"rank {rank} of attempt {aid[:12]} recorded step {nxt} after step {a}",
                      absence=nxt > a + 1)
                break
    for aid, ranks in by_attempt.items():
        if len(ranks) < 2:
            continue
        sets = {r: set(s) for r, s in ranks.items()}
        common_top = min(max(s) for s in sets.values())
        for r, s in sets.items():
            for o, so in sets.items():
                missing = sorted(x for x in so - s if x <= common_top)
                if missing:
                    m.add(SYSTEM, "lockstep", f"rank {o} of attempt {aid[:12]} did step {missing[0]}, rank {r} "
                                              f"did not (every step is a collective of all ranks)", absence=True)
                    break
        tops = sorted(max(s) for s in sets.values())
        if tops[-1] - tops[0] > 1:
            m.add(SYSTEM, "lockstep", f"the ranks of attempt {aid[:12]} stopped {tops[-1] - tops[0]} steps apart",
                  absence=True)


# -- every restart was decided, every rank of a finished run ended
def restarts(b) -> None:
    m = b.m
    for fit in b.h.fits.values():
        atts = [a for a in b.h.ordered() if a.key[0] == fit.index and a.start is not None]
        decided = [f for f in fit.failures if f.get("decision") == "RETRY"]
        resized = any(e.get("kind") == "controller_state" and e.get("cur") == "RESIZING"
                      and e.get("fit_index", fit.index) == fit.index for e in b.events)
        if len(atts) > 1 and not decided and not resized:
            m.add(RECORDS, "restart", f"fit {fit.index} started {len(atts)} attempts, and no failure decision "
                                      f"retried any", absence=True)
        end = fit.end or {}
        if end.get("outcome") == "succeeded" and atts and b.small:
            last = atts[-1]
            ended = {e.get("rank") for e in last.events if e.get("kind") == "worker_end"}
            started = {e.get("rank") for e in last.worker_starts}
            if started and ended and started - ended:
                m.add(RECORDS, "worker-end", f"fit {fit.index} succeeded, and rank(s) "
                                             f"{sorted(started - ended, key=str)} of its last attempt recorded no "
                                             f"end", absence=True)
        if end.get("outcome") == "succeeded" and end.get("error_type"):
            m.add(RECORDS, "fit-order", f"fit {fit.index} succeeded with error {str(end.get('error_type'))[:40]}")
