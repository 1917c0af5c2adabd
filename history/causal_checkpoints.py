"""Rules of the causal model about checkpoints and reports: each checkpoint reported, then
registered (once, under its step, for its attempt, in order), then restored as registered; and
each process reports its own steps, in order, every rank alike (report is a collective).

Reading the registrations builds `m.registered`, which later rules read. Split out of
history/causal.py, which runs these steps with the others: each function takes the model builder
(`_Builder` of causal.py) and adds its findings to `b.m`. Pure.
"""

from __future__ import annotations

import os
from collections import defaultdict
from typing import Any, Dict, List, Tuple

from ftharness.history.columns import having
from ftharness.history.tolerances import RECORDS, SYSTEM, TOL_CROSS, num as _num


# -- checkpoints: report -> registration -> restore
def checkpoints(b) -> None:
    m = b.m
    reports: Dict[str, List[dict]] = defaultdict(list)
    for att in b.h.ordered():
        for r in having(att.reports, "checkpoint", ("seq", "t", "step", "rank", "attempt_id", "pid", "node_id")):
            if isinstance(r.get("checkpoint"), str):
                reports[r["checkpoint"]].append(r)
    ray = b.m.declared.runtime != "torchrun"
    last_step: Dict[Any, int] = {}
    for e in b.events:
        if e.get("kind") != "checkpoint_registered":
            continue
        name, t, step = e.get("checkpoint"), _num(e.get("t")), e.get("step")
        where = f"checkpoint_registered seq {e.get('seq')} ({str(name)[:40]})"
        if not isinstance(name, str):
            continue
        if name in m.registered:
            m.add(SYSTEM, "registration", f"{where}: registered twice (first at seq {m.registered[name].get('seq')})")
            continue
        m.registered[name] = e
        path = e.get("path")
        if isinstance(path, str) and path and os.path.basename(path.rstrip("/")) != name:
            m.add(SYSTEM, "registration", f"{where}: its path {path[-60:]} names another checkpoint")
        mine = reports.get(name, [])
        if not mine:
            m.add(SYSTEM, "registration", f"{where}: no rank reported it", absence=True)
            continue
        first = min(mine, key=lambda r: _num(r.get("t")) or 0.0)
        if t is not None and _num(first.get("t")) is not None and first["t"] > t + TOL_CROSS:
            m.add(SYSTEM, "registration", f"{where}: registered {first['t'] - t:.1f} s before rank "
                                          f"{first.get('rank')} reported it")
        if type(step) is int and type(first.get("step")) is int and step != first["step"]:
            m.add(SYSTEM, "registration", f"{where}: registered as step {step}, reported as step {first['step']}")
        if ray and e.get("attempt_id") is not None and first.get("attempt_id") != e.get("attempt_id"):
            m.add(SYSTEM, "registration", f"{where}: registered for attempt {str(e.get('attempt_id'))[:12]}, "
                                          f"reported by attempt {str(first.get('attempt_id'))[:12]}")
        node = first.get("node_id")
        death = m.node_deaths.get(node) if node is not None else None
        if death is not None and _num(first.get("t")) is not None and first["t"] > death[0] + TOL_CROSS:
            m.add(SYSTEM, "zombie-report", f"{where}: reported by rank {first.get('rank')} on node "
                                           f"{str(node)[:8]} {first['t'] - death[0]:.1f} s after that node was "
                                           f"removed, and registered")
        fit = e.get("fit_index")
        if ray and type(step) is int and fit in last_step and step <= last_step[fit]:
            m.add(SYSTEM, "registration", f"{where}: step {step} registered after step {last_step[fit]}")
        if type(step) is int:
            last_step[fit] = max(step, last_step.get(fit, step))
    if ray:   # the controller registers reported checkpoints in order: none skipped before a later one
        regs_of: Dict[Any, List[int]] = defaultdict(list)
        for name, e in m.registered.items():
            if type(e.get("step")) is int:
                regs_of[e.get("attempt_id")].append(e["step"])
        for name, reps in reports.items():
            r = reps[0]
            later = [x for x in regs_of.get(r.get("attempt_id"), []) if type(r.get("step")) is int and x > r["step"]]
            if name not in m.registered and later:
                m.add(SYSTEM, "registration", f"checkpoint {name[:40]} (step {r.get('step')}) was reported and "
                                              f"never registered, while step {min(later)}'s was", absence=True)
    for att in b.h.ordered():
        for w in att.worker_starts:
            name = w.get("restored_checkpoint")
            if not isinstance(name, str):
                continue
            reg = m.registered.get(name)
            where = f"worker_start seq {w.get('seq')} (rank {w.get('rank')})"
            if reg is None:
                if att.key[0] == 1 and not any(f.start and f.start.get("resume_of") for f in b.h.fits.values()):
                    m.add(SYSTEM, "restore", f"{where} restored {name[:40]}, which was never registered",
                          absence=True)
                continue
            rt, wt = _num(reg.get("t")), _num(w.get("t"))
            if rt is not None and wt is not None and rt > wt + TOL_CROSS:
                m.add(SYSTEM, "restore", f"{where} restored {name[:40]} {rt - wt:.1f} s before it was registered")
            if type(w.get("restored_step")) is int and type(reg.get("step")) is int \
                    and w["restored_step"] != reg["step"]:
                m.add(SYSTEM, "restore", f"{where} restored {name[:40]} as step {w['restored_step']}, "
                                         f"registered as step {reg['step']}")


# -- reports: each process reports its own steps, in order, all ranks alike
def reports(b) -> None:
    m, d = b.m, b.m.declared
    if not b.small:
        return
    per_proc: Dict[Any, List[dict]] = defaultdict(list)
    steps_of: Dict[Tuple[Any, Any], set] = defaultdict(set)
    written: Dict[Tuple[Any, Any, Any], int] = {}
    names_at: Dict[Tuple[Any, Any], set] = defaultdict(set)
    digests: Dict[str, Tuple[str, int]] = {}
    for e in b.h.events:
        kind = e.get("kind")
        key = (e.get("attempt_id"), e.get("rank"))
        if kind == "step" and type(e.get("step")) is int:
            steps_of[key].add(e["step"])
        elif kind == "checkpoint_written" and type(e.get("step")) is int:
            k = (e.get("attempt_id"), e.get("rank"), e["step"])
            if k in written:
                m.add(RECORDS, "written", f"checkpoint_written seq {e.get('seq')}: rank {e.get('rank')} wrote "
                                          f"step {e['step']}'s checkpoint twice")
            written[k] = e.get("seq")
        elif kind == "report":
            per_proc[e.get("emitter") or key].append(e)
            where = f"report seq {e.get('seq')} (rank {e.get('rank')}, step {e.get('step')})"
            step, metrics = e.get("step"), e.get("metrics")
            if isinstance(metrics, dict) and "ftharness_step" in metrics and metrics["ftharness_step"] != step:
                m.add(RECORDS, "report", f"{where}: ftharness recorded it as step {metrics['ftharness_step']}")
            if d.holds("metrics-carry-step") and isinstance(metrics, dict) and "step" in metrics \
                    and metrics["step"] != step:
                m.add(SYSTEM, "report", f"{where}: the reference job reported metrics of step {metrics['step']}")
            if d.holds("step-before-report") and type(step) is int and steps_of[key] \
                    and step not in steps_of[key]:   # (a user job's step is its report)
                m.add(SYSTEM, "report", f"{where}: that rank did no step {step} before reporting it", absence=True)
            name = e.get("checkpoint")
            if name is not None:
                if not isinstance(name, str) or "/" in name or not name:
                    m.add(RECORDS, "report", f"{where}: {str(name)[:40]!r} is no checkpoint folder name")
                    continue
                names_at[(e.get("attempt_id"), step)].add(name)
                if d.holds("written-before-reported") and (e.get("attempt_id"), e.get("rank"), step) not in written:
                    m.add(RECORDS, "report", f"{where}: reports checkpoint {name[:40]}, which that rank never "
                                             f"wrote", absence=True)
                dg = e.get("digest")
                if d.holds("new-files-each-report") and isinstance(dg, str) and dg and type(step) is int:
                    if dg in digests and digests[dg][1] != step:
                        m.add(RECORDS, "report", f"{where}: checkpoint {name[:40]} of step {step} has the digest "
                                                 f"of {digests[dg][0][:40]}, of step {digests[dg][1]}")
                    digests.setdefault(dg, (name, step))
    for (aid, step), names in names_at.items():
        if len(names) > 1:
            m.add(SYSTEM, "report", f"the ranks of attempt {str(aid)[:12]} reported {len(names)} checkpoint "
                                    f"folders for step {step} (Ray raises when ranks disagree)")
    by_attempt: Dict[Any, Dict[Any, List[int]]] = defaultdict(dict)
    for proc, reps in per_proc.items():
        steps = [r.get("step") for r in reps if type(r.get("step")) is int]
        for a, nxt in zip(steps, steps[1:]):
            if nxt <= a:
                m.add(SYSTEM, "report", f"rank {reps[0].get('rank')} of attempt "
                                        f"{str(reps[0].get('attempt_id'))[:12]} reported step {nxt} after step {a}")
                break
        by_attempt[reps[0].get("attempt_id")][reps[0].get("rank")] = steps
    finished = {a.attempt_id for f in b.h.fits.values() if (f.end or {}).get("outcome") == "succeeded"
                for a in [max((x for x in b.h.ordered() if x.key[0] == f.index and x.start is not None),
                              key=lambda x: x.key, default=None)] if a is not None}
    for aid, ranks in by_attempt.items():   # report is a collective: every rank, every time
        if len(ranks) < 2:
            continue
        sets = {r: set(s) for r, s in ranks.items()}
        top = min(max(s, default=0) for s in sets.values())
        if aid in finished:   # a finished attempt's ranks all reported to the end
            top = max(max(s, default=0) for s in sets.values())
        for r, s in sets.items():
            other = next((x for o, so in sets.items() for x in sorted(so - s) if x <= top), None)
            if other is not None:
                m.add(SYSTEM, "report", f"rank {r} of attempt {str(aid)[:12]} did not report step {other}, "
                                        f"which the other ranks reported (report is a collective)", absence=True)
                break
