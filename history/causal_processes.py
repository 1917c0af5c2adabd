"""Rules of the causal model within one process: its clock runs forward, every event it records
carries its own identity, and it does its work in order (a step's checkpoint is written, then
reported, before the next step; it ends once).

Split out of history/causal.py, which runs these steps with the others: each function takes the
model builder (`_Builder` of causal.py) and adds its findings to `b.m`. Pure.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Optional, Tuple

from ftharness.history.tolerances import RECORDS, SYSTEM, TOL_SAME, num as _num

#: what one worker process is, on every event it records: one rank of one attempt, on one node
IDENTITY = ("pid", "rank", "attempt_id", "attempt", "node_id", "world_size", "restart_count", "fit_index")


def _emitter_pid(name: Any) -> Optional[int]:
    m = re.match(r"^(?:worker|controller|injector|harness|rendezvous)-(\d+)-", str(name or ""))
    return int(m.group(1)) if m else None


def clocks(b) -> None:
    """Within one emitter (one process), clock readings do not run backwards."""
    last: Dict[Any, Tuple[float, Any]] = {}
    for e in b._all():
        em, t = e.get("emitter"), _num(e.get("t"))
        if em is None or t is None:
            continue
        prev = last.get(em)
        if prev is not None and t < prev[0] - TOL_SAME:
            b.m.add(RECORDS, "clock", f"{e.get('kind')} seq {e.get('seq')} of {em} is {prev[0] - t:.3f} s "
                                         f"before that process's previous event (seq {prev[1]})")
        if prev is None or t > prev[0]:
            last[em] = (t, e.get("seq"))
    who: Dict[Any, Tuple[Any, ...]] = {}
    for e in b._all():   # a process's events carry its own pid, and a worker is one rank of one attempt
        pid, em = e.get("pid"), _emitter_pid(e.get("emitter"))
        if pid is not None and em is not None and pid != em and e.get("source") in ("worker", "controller"):
            b.m.add(RECORDS, "emitter", f"{e.get('kind')} seq {e.get('seq')} says pid {pid}, "
                                           f"its emitter {e.get('emitter')} is pid {em}")
        if e.get("source") == "worker" and e.get("emitter") is not None:
            ident = tuple(e.get(k) for k in IDENTITY)
            first = who.setdefault(e["emitter"], ident)
            if ident != first:
                diff = next(k for k, x, y in zip(IDENTITY, first, ident) if x != y)
                b.m.add(RECORDS, "emitter", f"{e.get('kind')} seq {e.get('seq')} of {e['emitter']} says "
                                               f"{diff} {str(ident[IDENTITY.index(diff)])[:20]}, that process's "
                                               f"other events say {str(first[IDENTITY.index(diff)])[:20]}")


# -- one process does its work in order
def sequence(b) -> None:
    """Within one worker process: a step's checkpoint is written, then reported, before the next
    step; a process ends once, at its last step; its end comes after its last step."""
    m = b.m
    if not b.small:
        return
    state: Dict[Any, dict] = {}
    for e in b.h.events:
        if e.get("source") != "worker" or e.get("emitter") is None:
            continue
        kind, em = e.get("kind"), e["emitter"]
        st = state.setdefault(em, {"step": None, "reported": set(), "written": set(), "ended": None})
        where = f"{kind} seq {e.get('seq')} (rank {e.get('rank')})"
        step = e.get("step") if type(e.get("step")) is int else None
        if st["ended"] is not None and kind != "worker_error":
            m.add(RECORDS, "sequence", f"{where}: after that process's worker_end (seq {st['ended']})")
        if kind == "step" and step is not None:
            prev = st["step"]
            if m.declared.holds("written-before-reported") and prev is not None and prev in st["written"] \
                    and prev not in st["reported"]:
                m.add(SYSTEM, "sequence", f"{where}: stepped on before reporting the checkpoint of step {prev}")
            st["step"] = step
        elif kind == "checkpoint_written" and step is not None:
            if step != st["step"]:
                m.add(SYSTEM, "sequence", f"{where}: wrote step {step}'s checkpoint at step {st['step']}")
            st["written"].add(step)
        elif kind == "report" and step is not None:
            if step != st["step"] and m.declared.holds("step-before-report"):
                m.add(SYSTEM, "sequence", f"{where}: reported step {step} at step {st['step']}")
            if e.get("checkpoint") is not None and m.declared.holds("written-before-reported") \
                    and step not in st["written"]:
                m.add(SYSTEM, "sequence", f"{where}: reported step {step}'s checkpoint before writing it")
            st["reported"].add(step)
        elif kind == "worker_end":
            if st["ended"] is not None:
                m.add(RECORDS, "sequence", f"{where}: that process ended twice")
            st["ended"] = e.get("seq")
            if step is not None and st["step"] is not None and step != st["step"]:
                m.add(SYSTEM, "sequence", f"{where}: ended at step {step}, its last step was {st['step']}")
