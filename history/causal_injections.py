"""Rules of the causal model about each fault as the injector recorded it: its times agree, it is
recorded once, of the scenario's kind, on the scenario's trigger, and it fired when that trigger
did. Reading the injections also gathers what the faults did that other rules judge by: the
drains (deadline, when), the nodes removed and the processes killed (`m.drains`, `m.node_deaths`,
`m.pid_deaths`, `m.injections`).

Split out of history/causal.py, which runs these steps with the others: each function takes the
model builder (`_Builder` of causal.py) and adds its findings to `b.m`. What a fault's record
holds against the scenario and the run beyond this is history/causal_faults.py's. Pure.
"""

from __future__ import annotations

from typing import Any, Dict, Tuple

from ftharness.history.tolerances import RECORD_LAG_S, RECORDS, TOL_CROSS, TOL_SAME, num as _num


def _trigger(at: dict) -> Tuple:
    """A trigger in one form: (step, rank, time, event, nth, hold)."""
    return (at.get("step"), at.get("rank"), at.get("time_s"), at.get("event"), at.get("nth", 1),
            at.get("hold", True))


# -- faults: when, what, to whom
def faults(b) -> None:
    m, specs = b.m, b.m.declared.fault_specs
    for e in b.events:
        kind = e.get("kind")
        if kind not in ("fault_injected", "fault_action", "fault_healed"):
            continue
        idx, fkind = e.get("fault"), e.get("fault_kind")
        t, done, asked = _num(e.get("t")), _num(e.get("t_done")), _num(e.get("t_requested"))
        where = f"fault {idx} ({fkind}) {kind} seq {e.get('seq')}"
        if done is not None and t is not None:
            if done > t + TOL_SAME:
                m.add(RECORDS, "fault-times", f"{where}: done at {done:.3f}, after it was written ({t:.3f})")
            elif t - done > RECORD_LAG_S:
                m.add(RECORDS, "fault-times", f"{where}: done {t - done:.1f} s before it was written")
        if done is not None and asked is not None and asked > done + TOL_SAME:
            m.add(RECORDS, "fault-times", f"{where}: asked for at {asked:.3f}, after it was done ({done:.3f})")
        if kind == "fault_healed":   # (its times only: what a heal undid is causal_declared.fault_heals')
            continue
        if kind == "fault_injected" and type(idx) is int:
            if idx in m.injections:
                m.add(RECORDS, "fault-twice", f"fault {idx} is recorded as injected twice "
                                              f"(seq {m.injections[idx].get('seq')} and {e.get('seq')})")
                continue
            m.injections[idx] = e
            if 0 <= idx < len(specs):
                spec = specs[idx]
                if isinstance(spec, dict) and isinstance(fkind, str) and spec.get("kind") not in (None, fkind):
                    m.add(RECORDS, "fault-kind", f"fault {idx} is {spec.get('kind')} in the scenario, "
                                                 f"{fkind[:40]} in the history")
                want, got = (spec.get("at") if isinstance(spec, dict) else None), e.get("trigger")
                if isinstance(want, dict) and isinstance(got, dict) and _trigger(want) != _trigger(got):
                    m.add(RECORDS, "fault-trigger", f"fault {idx} fired on trigger {_trigger(got)}, "
                                                    f"the scenario's is {_trigger(want)}")
        hit = e.get("target_hit") if kind == "fault_injected" else e.get("detail")
        hit = hit if isinstance(hit, dict) else {}
        when = m.fault_time(e)
        if when is None:
            continue
        facts = m.declared.kind(fkind)
        if kind == "fault_injected" and facts.drains_node and hit.get("node_id"):
            if _num(hit.get("deadline_ms")) is not None:
                m.drains[hit["node_id"]] = (int(hit["deadline_ms"]), when)
                m.drain_log.setdefault(hit["node_id"], []).append((int(hit["deadline_ms"]), when))
        how = str(hit.get("how") or "")
        if kind == "fault_injected" and facts.kills_process and hit.get("pid") is not None \
                and "SIGKILL" in how.upper():
            m.pid_deaths[hit["pid"]] = (when, e)
        if hit.get("node_id") and "remove_node" in how:
            if facts.removes_node:
                m.node_deaths.setdefault(hit["node_id"], (when, e))
        if kind == "fault_action" and facts.drains_node and hit.get("node_id") \
                and "ms_after_deadline" in hit and hit["node_id"] in m.drains:
            derived = _num(hit.get("ms_after_deadline"))
            actual = when * 1000.0 - m.drains[hit["node_id"]][0]
            if derived is not None and abs(derived - actual) > TOL_SAME * 1000:
                m.add(RECORDS, "derived-field", f"fault {idx}: the kill is recorded {derived:.0f} ms after "
                                                f"the deadline, its own time says {actual:.0f} ms")


# -- each fault fired when its trigger did
def triggers(b) -> None:
    m = b.m
    if not b.small:
        return
    first_step: Dict[Tuple[int, Any], float] = {}
    for e in b.h.events:
        if e.get("kind") == "step" and type(e.get("step")) is int and _num(e.get("t")) is not None:
            for key in ((e["step"], None), (e["step"], e.get("rank"))):
                first_step.setdefault(key, e["t"])
    for idx, e in m.injections.items():
        at = e.get("trigger")
        if not isinstance(at, dict) or type(at.get("step")) is not int:
            continue
        fired = first_step.get((at["step"], at.get("rank")))
        asked = _num(e.get("t_requested")) or _num(e.get("t_done"))
        if fired is not None and asked is not None and asked < fired - TOL_CROSS:
            m.add(RECORDS, "fault-trigger", f"fault {idx} was asked for {fired - asked:.1f} s before its trigger "
                                            f"(step {at['step']}) fired")
        if fired is None and e.get("fit_index", 1) == 1 and any(x.get("kind") == "step" for x in b.h.events):
            m.add(RECORDS, "fault-trigger", f"fault {idx} fired on step {at['step']}, which no rank recorded",
                  absence=True)
