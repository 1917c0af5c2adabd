"""Whether a results folder's scenario.yaml is the scenario its history ran.

`check` judges a history with the expectations of the folder's scenario.yaml; a
scenario.yaml swapped for another scenario's (easier expectations) or a history whose
fault records carry a kind that is no name (`fault_kind: 7`) would otherwise pass. The
history's own record says which scenario ran (`run_start.scenario`) and what each fault
was (`fault_injected`/`fault_skipped`/`fault_action`: `fault`, `fault_kind`). This scans
only those lines (a byte search, then a JSON decode of the few lines found), so a
history of gigabytes costs one pass at disk speed and no events in memory.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, List, Optional, Set, Tuple

from ftharness.history.records import MAX_LINE, history_path, open_regular

#: the kinds whose lines are decoded, and the bytes that find them
_MARKS = (b'"run_start"', b'"fault_injected"', b'"fault_skipped"', b'"fault_action"')
_BLOCK = 8 << 20
MAX_FOUND = 10_000   # fault lines kept (a scenario has at most 100 faults; a soak a few thousand)


@dataclass
class Recorded:
    """What the history says it ran: scenario names, and (seq, fault, fault_kind) of fault records."""

    scenarios: Set[str] = field(default_factory=set)
    faults: List[Tuple[Any, Any, Any]] = field(default_factory=list)
    damaged: List[str] = field(default_factory=list)


def _line_at(block: bytes, i: int) -> bytes:
    start = block.rfind(b"\n", 0, i) + 1
    end = block.find(b"\n", i)
    return block[start:end if end >= 0 else len(block)]


def recorded(results: str) -> Optional[Recorded]:
    """The history's record of its scenario and faults; None without a readable history."""
    out = Recorded()
    try:
        f = open_regular(history_path(results))
    except OSError:
        return None
    carry = b""
    with f:
        while True:
            block = f.read(_BLOCK)
            if not block and not carry:
                break
            data = carry + block
            cut = data.rfind(b"\n") + 1 if block else len(data)
            whole, carry = data[:cut], data[cut:]
            if len(carry) > MAX_LINE:   # a line too long to be an event: skipped (the reader names it)
                carry = b""
            seen = set()
            for mark in _MARKS:
                i = whole.find(mark)
                while i >= 0:
                    start = whole.rfind(b"\n", 0, i) + 1
                    if start not in seen:
                        seen.add(start)
                        _take(_line_at(whole, i), out)
                    i = whole.find(mark, i + len(mark))
            if not block:
                break
    return out


def _take(line: bytes, out: Recorded) -> None:
    try:
        e = json.loads(line)
    except (ValueError, RecursionError):
        return
    if not isinstance(e, dict):
        return
    kind = e.get("kind")
    if kind == "run_start":
        name = e.get("scenario")
        if isinstance(name, str):
            out.scenarios.add(name)
        else:
            out.damaged.append(f"run_start seq {str(e.get('seq'))[:20]}: scenario is no name "
                               f"({type(name).__name__})")
    elif kind in ("fault_injected", "fault_skipped", "fault_action") and len(out.faults) < MAX_FOUND:
        out.faults.append((e.get("seq"), e.get("fault"), e.get("fault_kind")))


def scenario_problem(scenario_name: Any, rec: Optional[Recorded]) -> Optional[str]:
    """Why the folder's scenario.yaml is not the scenario its history ran, or None: its `name`
    is not the name `run_start` recorded (another scenario's file swapped in, with other
    expectations). Damage to the record of what ran, so the run is INCONCLUSIVE, never a PASS.
    None when the history records no scenario (nothing to compare with)."""
    if rec is None or not rec.scenarios:
        return None
    if isinstance(scenario_name, str) and scenario_name in rec.scenarios:
        return None
    ran = ", ".join(sorted(n[:60] for n in rec.scenarios)[:3])
    named = (scenario_name[:60] if isinstance(scenario_name, str)
             else f"{str(scenario_name)[:40]} ({type(scenario_name).__name__}: no scenario name)")
    return (f"scenario.yaml names {named}, but the history ran {ran}: a results folder is judged "
            f"with the scenario it ran")


def fault_record_problems(rec: Optional[Recorded]) -> List[str]:
    """Fault records the verdict cannot attribute (a kind that is no name, an index that is no
    count): damage, so the run is INCONCLUSIVE, never a PASS."""
    if rec is None:
        return []
    out = list(rec.damaged)
    for seq, index, kind in rec.faults:
        if not isinstance(kind, str) or not kind:
            out.append(f"fault record seq {str(seq)[:20]}: fault_kind is no fault kind ({type(kind).__name__})")
        elif type(index) is not int:
            out.append(f"fault record seq {str(seq)[:20]}: fault is no fault index ({type(index).__name__})")
        if len(out) >= 5:
            break
    return out
