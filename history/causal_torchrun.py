"""Rules of the causal model for TorchElastic runs (workload.runtime: torchrun): each node's agent
and its workers (history/causal_declared.py runs them with the others)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Dict, Tuple

from ftharness.history.tolerances import RECORDS, TOL_CROSS, num

_num = num


def restart_count(b) -> None:
    """A torchrun worker's restart count is the number of restarts its own agent charged before it
    (TORCHELASTIC_RESTART_COUNT; each agent counts its own): ftharness's record otherwise, INCONCLUSIVE."""

    if b.m.declared.runtime != "torchrun":
        return
    charged: Dict[Any, int] = defaultdict(int)
    seen = set()
    for e in b.events:
        if e.get("kind") == "failure" and e.get("budget") == "max_restarts" and e.get("decision") == "RETRY":
            charged[e.get("node_id")] += 1
        elif e.get("kind") == "run_start":
            charged.clear()
    for e in b._worker_events():
        rc, em = e.get("restart_count"), e.get("emitter")
        if type(rc) is not int or em in seen:
            continue
        seen.add(em)
        n = sum(1 for f in b.events if f.get("kind") == "failure" and f.get("budget") == "max_restarts"
                and f.get("decision") == "RETRY" and f.get("node_id") == e.get("node_id")
                and f.get("fit_index") == e.get("fit_index") and (_num(f.get("t")) or 0) <= (_num(e.get("t")) or 0))
        if rc != n:
            b.m.add(RECORDS, "restart-count", f"{e.get('kind')} seq {e.get('seq')} (rank {e.get('rank')}): restart "
                                              f"count {rc}, its agent had charged {n} restart(s)")


def agent_order(b) -> None:
    """torchrun: each node's agent decides on a round's failure before it starts its workers of a later
    round, and an agent that restarts only because the membership changed (its workers HEALTHY)
    decides after another agent's failure of that round. A whole agent's clock shifted breaks one of
    these orders: INCONCLUSIVE (ftharness's record of the agents)."""

    if b.m.declared.runtime != "torchrun":
        return
    rounds = {e.get("attempt_id"): i for i, e in enumerate(x for x in b.events if x.get("kind") == "attempt_start")}
    first: Dict[Tuple[Any, int], float] = {}   # (node, round ordinal) -> its workers' first event
    for e in b._worker_events():
        r, t = rounds.get(e.get("attempt_id")), _num(e.get("t"))
        if r is not None and t is not None:
            key = (e.get("node_id"), r)
            first[key] = min(t, first.get(key, t))
    fails = [e for e in b.events if e.get("kind") == "failure" and e.get("source") == "controller"
             and rounds.get(e.get("attempt_id")) is not None and _num(e.get("t")) is not None]
    for f in fails:
        r, t, node = rounds[f["attempt_id"]], _num(f["t"]), f.get("node_id")
        later = [v for (n, rr), v in first.items() if n == node and rr > r]
        if later and t > min(later) + TOL_CROSS:
            b.m.add(RECORDS, "agent-order", f"failure seq {f.get('seq')}: the agent on {node} decided on round "
                                            f"{r} {t - min(later):.1f} s after its workers of a later round started")
            return
        if f.get("state") == "HEALTHY":
            causes = [_num(x["t"]) for x in fails if rounds[x["attempt_id"]] == r and x.get("state") != "HEALTHY"
                      and x.get("node_id") != node]
            if causes and t < min(causes) - TOL_CROSS:
                b.m.add(RECORDS, "agent-order", f"failure seq {f.get('seq')}: the agent on {node} restarted round {r} "
                                                f"for a membership change {min(causes) - t:.1f} s before any agent's "
                                                f"failure of that round")
                return


def agents(b) -> None:
    """torchrun: an agent whose node ran workers took part, and a run that succeeded ended with every
    taking-part agent that no fault killed exiting 0 (the runner's record: INCONCLUSIVE)."""

    if b.m.declared.runtime != "torchrun":
        return
    nodes = {n for g in b.m.groups.values() for _, n in g.workers.values()}
    for e in b.events:
        if e.get("kind") != "run_end":
            continue
        for a in e.get("agents") or []:
            if not isinstance(a, dict):
                continue
            if a.get("participated") is False and a.get("node_id") in nodes:
                b.m.add(RECORDS, "agent", f"run_end says agent {a.get('node_id')} took no part, and its node ran "
                                          f"workers")
            if e.get("outcome") == "succeeded" and a.get("participated") and not a.get("killed_by_fault") \
                    and a.get("exit_code") not in (0, None):
                b.m.add(RECORDS, "agent", f"run_end succeeded, and agent {a.get('node_id')} exited "
                                          f"{a.get('exit_code')}")
