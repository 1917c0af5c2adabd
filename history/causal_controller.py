"""Rules of the causal model about the controllers' own account: each controller's chain of
states, the attempts it started and shut down, its failure counts and what its fit returned,
each worker group's actors and local ranks, and under torchrun each agent deciding for its own
node's workers.

Split out of history/causal.py, which runs these steps with the others: each function takes the
model builder (`_Builder` of causal.py) and adds its findings to `b.m`. Pure.
"""

from __future__ import annotations

import os
from collections import defaultdict
from typing import Any, Dict

from ftharness.history.tolerances import RECORDS, SYSTEM


# -- the controller's chain of states
def states(b) -> None:
    last: Dict[Any, dict] = {}
    whole: Dict[Any, bool] = {}   # emitter -> its chain starts at INITIALIZING: it records every change
    for e in b.events:   # (each fit() has its own controller process: its own emitter)
        if e.get("kind") != "controller_state" or e.get("source") != "controller":
            continue
        em = e.get("emitter")
        # a recorder inside Ray's controller records every change (a synthetic history need not)
        whole.setdefault(em, em is not None and b.m.declared.runtime != "torchrun")
        prev = last.get(em) if whole[em] else None
        if prev is None and whole[em] and e.get("prev") not in ("INITIALIZING", None):
            b.m.add(RECORDS, "state-chain", f"controller_state seq {e.get('seq')}: the controller's first "
                                               f"recorded state leaves {e.get('prev')}, not INITIALIZING",
                       absence=True)
        if prev is not None and e.get("prev") != prev.get("cur") and not (
                e.get("prev") == prev.get("prev") and e.get("cur") == prev.get("cur")):
            b.m.add(RECORDS, "state-chain", f"controller_state seq {e.get('seq')} leaves {e.get('prev')}, "
                                               f"the last state recorded was {prev.get('cur')} "
                                               f"(seq {prev.get('seq')})", absence=True)
        last[em] = e


# -- the controller's own account of attempts
def controller(b) -> None:
    m = b.m
    ray = m.declared.runtime != "torchrun"
    current: Dict[Any, Any] = {}
    shut: Dict[Any, int] = defaultdict(int)
    starts: Dict[Any, int] = defaultdict(int)
    for e in b.events:
        kind, aid, em = e.get("kind"), e.get("attempt_id"), e.get("emitter")
        if kind == "run_start":
            current.clear()
        if e.get("source") != "controller" or em is None:
            continue
        if kind == "attempt_start":
            current[em] = aid
            starts[aid] += 1
            if not ray and starts[aid] == 2:
                m.add(RECORDS, "attempt", f"attempt_start seq {e.get('seq')}: round {aid} started twice")
        elif kind == "worker_group_shutdown":
            shut[aid] += 1
            if shut[aid] == 2:
                m.add(RECORDS, "attempt", f"worker_group_shutdown seq {e.get('seq')}: attempt "
                                          f"{str(aid)[:12]} shut down twice")
            if ray and em in current and aid != current[em]:   # it shuts down the group of the running attempt
                m.add(RECORDS, "attempt", f"worker_group_shutdown seq {e.get('seq')}: of attempt "
                                          f"{str(aid)[:12]} while the controller's current attempt was "
                                          f"{str(current[em])[:12]}")
        elif ray and kind in ("controller_state", "failure", "checkpoint_registered", "worker_group_started") \
                and em in current and aid != current[em]:
            m.add(RECORDS, "attempt", f"{kind} seq {e.get('seq')}: for attempt {str(aid)[:12]} while the "
                                      f"controller's current attempt was {str(current[em])[:12]}")
        if kind == "failure":
            counts, budget, count = e.get("counts"), e.get("budget"), e.get("count")
            if isinstance(counts, dict) and budget in counts and type(count) is int \
                    and counts[budget] != count and budget != "none":
                m.add(SYSTEM, "failure-count", f"failure seq {e.get('seq')}: count {count}, its counts say "
                                               f"{budget} {counts[budget]}")
    for fit in b.h.fits.values():   # every attempt followed by another was shut down
        atts = [a for a in b.h.ordered() if a.key[0] == fit.index and a.start is not None]
        for a in atts[:-1]:
            if ray and a.attempt_id is not None and not shut.get(a.attempt_id) and a.groups \
                    and any(x.get("emitter") for x in a.starts):
                m.add(RECORDS, "attempt", f"{b.h.label(a.key)} was followed by another, and its worker "
                                          f"group was never shut down", absence=True)
        end = fit.end or {}
        last_state = next((e for e in reversed(b.events) if e.get("kind") == "controller_state"
                           and e.get("source") == "controller" and e.get("emitter") is not None
                           and e.get("fit_index", fit.index) == fit.index), None)
        if ray and end.get("outcome") == "succeeded" and last_state is not None \
                and last_state.get("cur") != "FINISHED":
            m.add(RECORDS, "state-chain", f"fit {fit.index} succeeded, and its controller's last recorded "
                                          f"state is {last_state.get('cur')}", absence=True)
        if end.get("outcome") == "succeeded" and isinstance(end.get("checkpoint"), str):
            regs = [e for e in b.events if e.get("kind") == "checkpoint_registered"
                    and e.get("fit_index", fit.index) == fit.index and isinstance(e.get("checkpoint"), str)]
            if regs and os.path.basename(end["checkpoint"].rstrip("/")) != regs[-1]["checkpoint"]:
                m.add(SYSTEM, "result", f"fit {fit.index} returned checkpoint "
                                        f"{os.path.basename(end['checkpoint'])[:40]}, its latest registered "
                                        f"was {regs[-1]['checkpoint'][:40]}")
    for g in m.groups.values():   # one actor, one local rank per node, and a torchrun worker's agent is its node
        pass
    for e in b.events:
        if e.get("kind") != "worker_group_started":
            continue
        seen_actor, local = set(), set()
        for w in e.get("workers") or []:
            if not isinstance(w, dict):
                continue
            a = w.get("actor_id")
            if a is not None:
                if a in seen_actor:
                    m.add(SYSTEM, "group", f"worker_group_started seq {e.get('seq')} lists actor {str(a)[:12]} twice")
                seen_actor.add(a)
            if w.get("local_rank") is not None:
                key = (w.get("node_id"), w.get("local_rank"))
                if key in local:
                    m.add(SYSTEM, "group", f"worker_group_started seq {e.get('seq')}: two workers are local rank "
                                           f"{w.get('local_rank')} on node {w.get('node_id')}")
                local.add(key)
            if w.get("agent") is not None and w.get("node_id") is not None \
                    and str(w["node_id"]) != f"agent-{w['agent']}":
                m.add(RECORDS, "agent", f"worker_group_started seq {e.get('seq')}: rank {w.get('rank')} on "
                                        f"{w.get('node_id')} under agent {w.get('agent')}")


# -- TorchElastic: each agent decides for its own node's workers
def torchrun(b) -> None:
    m = b.m
    if m.declared.runtime != "torchrun":
        return
    for e in b.events:
        if e.get("source") != "controller" or e.get("agent") is None or e.get("node_id") is None:
            continue
        if str(e.get("node_id")) != f"agent-{e.get('agent')}":
            m.add(RECORDS, "agent", f"{e.get('kind')} seq {e.get('seq')}: agent {e.get('agent')} on node "
                                    f"{e.get('node_id')}")
        if e.get("kind") != "failure" or e.get("budget") != "max_restarts":
            continue
        group = m.groups.get(e.get("attempt_id"))
        failed = e.get("worker_failures")
        if group is None or not isinstance(failed, dict):
            continue
        mine = {str(r) for r, (_, node) in group.workers.items() if node == e.get("node_id")}
        others = sorted(r for r in failed if str(r) not in mine)
        if not failed or others:
            m.add(SYSTEM, "agent", f"failure seq {e.get('seq')}: the agent on {e.get('node_id')} charged a "
                                   f"restart for rank(s) {others or '(none)'}, not workers of its node "
                                   f"(ranks {sorted(mine)})")
    for att in b.h.ordered():   # a torchrun worker registers each checkpoint it reports
        if not b.small:
            break
        names = {r.get("checkpoint") for r in att.reports if isinstance(r.get("checkpoint"), str)}
        regs = {e.get("checkpoint") for e in att.events if e.get("kind") == "checkpoint_registered"}
        cut = att.errors or any(f.get("attempt_id") == att.attempt_id for f in b.h.failures())
        missing = sorted(n for n in names - regs if n not in m.registered)
        if missing and not cut:
            m.add(RECORDS, "registration", f"{b.h.label(att.key)} reported {missing[0][:40]} and never "
                                           f"registered it", absence=True)
