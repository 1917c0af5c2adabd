"""Rules of the causal model about how attempts and fits end: each failure decided for an attempt
that was running, each fit() between its run_start and run_end, no worker of an attempt after
its group was shut down, and what fit() returned agreeing with what the ranks did.

Split out of history/causal.py, which runs these steps with the others: each function takes the
model builder (`_Builder` of causal.py) and adds its findings to `b.m`. Pure.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Dict, Tuple

from ftharness.history.causal_attempts import TOL_GROUP
from ftharness.history.tolerances import RECORDS, SYSTEM, TOL_CROSS, TOL_SAME, num as _num


# -- failures: whose, when
def failures(b) -> None:
    m = b.m
    for e in b.events:
        if e.get("kind") != "failure":
            continue
        aid, t = e.get("attempt_id"), _num(e.get("t"))
        where = f"failure seq {e.get('seq')} ({e.get('error_type')})"
        if isinstance(aid, str) and m.attempt_t and aid not in m.attempt_t and b.m.declared.runtime != "torchrun":
            m.add(RECORDS, "failure-attempt", f"{where}: for attempt {aid[:12]}, which never started",
                  absence=True)
        start = m.attempt_t.get(aid) if isinstance(aid, str) else None
        if start is not None and t is not None and t < start - TOL_CROSS:
            m.add(SYSTEM, "failure-attempt", f"{where}: decided {start - t:.1f} s before attempt "
                                             f"{aid[:12]} started")
        nxt = m.next_attempt_t.get(aid) if isinstance(aid, str) else None
        if nxt is not None and t is not None and t > nxt + TOL_CROSS and b.m.declared.runtime != "torchrun":
            m.add(SYSTEM, "failure-attempt", f"{where}: decided for attempt {aid[:12]} {t - nxt:.1f} s after "
                                             f"the next attempt had started")
        node = e.get("node_id")
        death = m.node_deaths.get(node) if node is not None else None
        if death is not None and t is not None and t > death[0] + TOL_CROSS:
            m.add(SYSTEM, "after-death", f"{where}: decided by the agent on node {node}, {t - death[0]:.1f} s "
                                         f"after that node was removed (fault {death[1].get('fault')})")


# -- each fit() between its run_start and run_end
def fits(b) -> None:
    m = b.m
    for fit in b.h.fits.values():
        start, end = fit.start, fit.end
        ts = _num((start or {}).get("t"))
        te = _num((end or {}).get("t"))
        if ts is not None and te is not None and te < ts - TOL_SAME:
            m.add(RECORDS, "fit-order", f"fit {fit.index} ended {ts - te:.1f} s before it started")
    first = next((f.start for _, f in sorted(b.h.fits.items()) if f.start is not None), None)
    ts = _num((first or {}).get("t"))
    if ts is None:
        return
    early = next((e for e in b.events if e.get("source") in ("controller", "worker")
                  and (_num(e.get("t")) or ts) < ts - TOL_CROSS), None)
    if early is not None:
        m.add(RECORDS, "fit-order", f"{early.get('kind')} seq {early.get('seq')} is "
                                    f"{ts - early['t']:.1f} s before the run started")


# -- the ends of attempts and fits
def ends(b) -> None:
    m = b.m
    ordinal = {}
    for att in b.h.ordered():
        if att.attempt_id is not None:
            ordinal[att.attempt_id] = att.key[1]
    shut: Dict[str, float] = {}
    for e in b.events:
        if e.get("kind") == "worker_group_shutdown" and isinstance(e.get("attempt_id"), str):
            t = _num(e.get("t"))
            if t is not None:
                shut.setdefault(e["attempt_id"], t)
    ends: Dict[Any, dict] = {}
    for e in b.events:
        if e.get("kind") == "run_end":
            fit = e.get("fit_index")
            if fit in ends:
                m.add(RECORDS, "fit-order", f"fit {fit} has two run_end events (seq {ends[fit].get('seq')} and "
                                            f"{e.get('seq')})")
            ends[fit] = e
    from ftharness.history.causal_declared import shut_before

    ended = shut_before(b)   # (a group started again under the same id, RESCHEDULING, is up again)
    partitioned = {(e.get("target_hit") or {}).get("node_id") for e in b.events
                   if e.get("kind") == "fault_injected" and b.m.declared.kind(e.get("fault_kind")).cuts_off}
    errors: Dict[Any, int] = defaultdict(int)
    starts: Dict[Tuple[Any, Any], int] = defaultdict(int)
    for e in b._worker_events():
        aid, kind = e.get("attempt_id"), e.get("kind")
        where = f"{kind} seq {e.get('seq')} (rank {e.get('rank')})"
        att = e.get("attempt")
        if b.m.declared.runtime != "torchrun" and isinstance(aid, str) and aid in ordinal \
                and type(att) is int and att != ordinal[aid] and len(b.h.fits) == 1:
            m.add(RECORDS, "attempt", f"{where}: says attempt {att}, its attempt id is attempt {ordinal[aid]}")
        t = _num(e.get("t"))
        end = ended(aid, t)
        if end is not None and t is not None and t > end + TOL_GROUP and e.get("node_id") not in partitioned:
            m.add(SYSTEM, "after-shutdown", f"{where}: {t - end:.1f} s after its attempt's worker group was "
                                            f"shut down (its node was not cut off)")
        if kind == "worker_error":
            errors[(aid, e.get("rank"))] += 1
            if errors[(aid, e.get("rank"))] == 2:
                m.add(RECORDS, "worker-error", f"{where}: the second error of one worker (a train function "
                                               f"raises once)")
        if kind == "worker_start":
            starts[(aid, e.get("rank"))] += 1
            if starts[(aid, e.get("rank"))] == 2:
                m.add(RECORDS, "worker-start", f"{where}: rank {e.get('rank')} started twice in one attempt")
            if e.get("restored_checkpoint") is None and e.get("restored_intact") is not None:
                m.add(RECORDS, "worker-start", f"{where}: restored nothing, yet says the restore was "
                                               f"{'intact' if e['restored_intact'] else 'damaged'}")
    # A group is what the start just before it asked for. An earlier start under the same
    # attempt id that failed before any group started (an elastic restart sized from a node
    # that is gone times out, and Ray retries it with fewer) asked for what it never got.
    asked: Dict[str, Dict[str, Any]] = {}
    for e in b.events:
        aid = e.get("attempt_id")
        if e.get("kind") == "attempt_start" and isinstance(aid, str):
            asked[aid] = e
        elif e.get("kind") == "worker_group_started" and isinstance(aid, str) and aid in asked:
            start = asked.pop(aid)
            g = m.groups.get(aid)
            n = start.get("num_workers")
            if g is not None and g.world_size is not None and type(n) is int and n != g.world_size \
                    and b.m.declared.runtime != "torchrun":
                m.add(SYSTEM, "group", f"attempt_start seq {start.get('seq')} asks for {n} workers, its group "
                                       f"has {g.world_size}")
    actors: Dict[Any, str] = {}
    for g in m.groups.values():
        pass
    for e in b.events:
        if e.get("kind") != "worker_group_started":
            continue
        for w in e.get("workers") or []:
            a = w.get("actor_id") if isinstance(w, dict) else None
            if a is None:
                continue
            if a in actors and actors[a] != e.get("attempt_id"):
                m.add(SYSTEM, "group", f"actor {str(a)[:12]} is a worker of two attempts' groups "
                                       f"(each restart creates new actors)")
            actors[a] = e.get("attempt_id")
    if b.m.declared.holds("returns-last-step"):
        for fit, e in ends.items():
            rv = e.get("return_value")
            step = rv.get("step") if isinstance(rv, dict) else None
            if e.get("outcome") == "succeeded" and type(step) is int and b.small:
                last = max((x.get("step") for x in b.h.events if x.get("kind") == "step"
                            and x.get("fit_index", fit) == fit and type(x.get("step")) is int), default=None)
                if last is not None and step != last:
                    m.add(SYSTEM, "return-value", f"fit {fit} returned step {step}, its last step was {last}")


# -- what fit() returned agrees with what the ranks did
def results(b) -> None:
    m = b.m
    if not b.small:
        return
    for fit in b.h.fits.values():
        end = fit.end or {}
        te = _num(end.get("t"))
        if te is not None:
            late = next((e for e in b.h.events if e.get("fit_index", fit.index) == fit.index
                         and e.get("source") in ("worker", "controller")
                         and (_num(e.get("t")) or te) > te + TOL_CROSS
                         and e.get("node_id") not in _cut_off(b)), None)
            if late is not None:
                m.add(RECORDS, "fit-order", f"{late.get('kind')} seq {late.get('seq')} is {late['t'] - te:.1f} s "
                                            f"after fit {fit.index} returned")
        rv = end.get("return_value")
        ends = [e for e in b.h.events if e.get("kind") == "worker_end" and e.get("rank") == 0
                and e.get("fit_index", fit.index) == fit.index and e.get("return_value") is not None]
        if isinstance(rv, dict) and ends and isinstance(ends[-1].get("return_value"), dict) \
                and ends[-1]["return_value"] != rv:
            m.add(SYSTEM, "return-value", f"fit {fit.index} returned {str(rv)[:60]}, rank 0 returned "
                                          f"{str(ends[-1]['return_value'])[:60]}")
        if isinstance(rv, dict) and ends and ends[-1].get("return_value") is not None \
                and type(rv.get("step")) is int and type(ends[-1].get("step")) is int \
                and rv["step"] != ends[-1]["step"]:
            m.add(SYSTEM, "return-value", f"fit {fit.index} returned step {rv['step']}, rank 0 ended at "
                                          f"step {ends[-1]['step']}")
        metrics = end.get("metrics")
        regs = [e for e in b.events if e.get("kind") == "checkpoint_registered"
                and e.get("fit_index", fit.index) == fit.index]
        if isinstance(metrics, dict) and metrics and regs and end.get("outcome") == "succeeded":
            name = regs[-1].get("checkpoint")
            # Ray's Result.metrics are rank 0's report (report_handler: metrics_per_worker[0]);
            # other ranks may report other values (e.g. their own shard's loss)
            rep = next((r for r in b.h.events if r.get("kind") == "report" and r.get("checkpoint") == name
                        and r.get("rank") == 0 and isinstance(r.get("metrics"), dict)), None)
            if rep is not None and rep["metrics"] != metrics:
                diff = sorted(k for k in set(rep["metrics"]) | set(metrics)
                              if rep["metrics"].get(k) != metrics.get(k))
                m.add(SYSTEM if b.m.declared.runtime != "torchrun" else RECORDS, "result",
                      f"fit {fit.index}'s result metrics differ from the report of its last registered "
                      f"checkpoint ({name}) in {', '.join(map(str, diff[:3]))}")
        for a in end.get("agents") or []:
            if not isinstance(a, dict) or a.get("node_id") is None:
                continue
            killed = a.get("node_id") in m.node_deaths
            if a.get("killed_by_fault") is not None and bool(a["killed_by_fault"]) != killed:
                m.add(RECORDS, "result", f"run_end says agent {a.get('node_id')} was "
                                         f"{'' if a['killed_by_fault'] else 'not '}killed by a fault; the faults "
                                         f"say {'it was' if killed else 'none killed it'}")


def _cut_off(b) -> set:
    """Nodes a fault partitioned, paused or degraded: their processes may write late."""
    return {(e.get("target_hit") or {}).get("node_id") for e in b.events if e.get("kind") == "fault_injected"
            and b.m.declared.kind(e.get("fault_kind")).cuts_off}
