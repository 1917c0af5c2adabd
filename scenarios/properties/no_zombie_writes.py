"""no_zombie_writes: nothing a finished attempt does afterwards lands in what
later attempts rely on: its late checkpoints are neither registered nor restored,
and every registered checkpoint was reported by an attempt (one nobody reported
has no known writer: it is no evidence of a live one)."""

from __future__ import annotations

import bisect
from collections import defaultdict
from typing import Dict, List

from ftharness.history.columns import having
from ftharness.history.model import Attempt, History, _seq, as_history
from ftharness.scenarios.properties.base import CheckResult, Events, Facts, PropertyContext, not_judged, result


def applies(facts: Facts) -> bool:
    return facts.restarts


def check(events: Events, context: PropertyContext) -> CheckResult:
    """Nothing a finished attempt does afterwards lands in what later attempts
    rely on: its late checkpoints are neither registered nor restored.

    Workers of an ended attempt often keep computing for a moment while Ray
    tears them down, and a partitioned worker runs on for as long as it is cut
    off (its events come from its node's journal); those late steps, writes and
    reports are listed as findings.
    """
    h = as_history(events)
    if not any(a.end is not None for a in h.ordered()):
        return not_judged("no_zombie_writes", "no attempt ended: nothing could be a zombie")
    findings: List[str] = []
    late_ckpts: Dict[str, str] = {}
    for att in h.ordered():
        if att.end is None:
            continue
        for e in sorted(_later(h, att, att.steps) + _later(h, att, att.reports) + _later(h, att, att.written),
                        key=lambda e: e.get("seq", 0)):
            if _after(e, att.end):
                text = (f"{h.label(att.key)} rank {e.get('rank')} wrote {e.get('kind')} (step {e.get('step')}) "
                        f"at seq {e.get('seq')} after the attempt ended at seq {att.end.get('seq')} "
                        f"({att.end.get('kind')})"
                        + (f", {e['t'] - att.end['t']:.1f} s later, journaled on its node (the history "
                           f"was out of its reach)" if e.get("spooled") and att.end.get("t") else ""))
                findings.append(text)
                if e.get("kind") == "report" and e.get("checkpoint"):
                    late_ckpts[e["checkpoint"]] = text
    restores = _zombie_restores(h, late_ckpts)
    violations = _dead_registrations(h) + restores
    ended = sum(1 for a in h.ordered() if a.end is not None)
    summary = (f"{ended} ended attempt(s): no late checkpoint registered or restored; "
               f"{len(h.registered)} registered checkpoint(s) all reported by live attempts"
               + (f"; {len(findings)} late write(s) after their attempt ended (findings)" if findings else ""))
    return result("no_zombie_writes", violations, findings, summary, standing=restores)


def _zombie_restores(h: History, late_ckpts: Dict[str, str]) -> List[str]:
    out = []
    for att in h.ordered():
        for ws in att.worker_starts:
            if ws.get("restored_checkpoint") in late_ckpts:
                out.append(f"{h.label(att.key)} rank {ws.get('rank')} restored "
                           f"{ws['restored_checkpoint']}, persisted by a zombie: {late_ckpts[ws['restored_checkpoint']]}")
    return out


def _later(h: History, att: Attempt, events: List[dict]) -> List[dict]:
    """The events of `att` (one of its lists) that may come after its end: all of
    them, or where every seq is an int (the lists then ascend in it) those past
    the end's seq, found by a binary search."""
    if not h.int_seqs:
        return events
    return events[bisect.bisect_right(events, att.end.get("seq", 0), key=_seq):]


def _after(e: dict, end: dict) -> bool:
    """Later in seq and, when both carry a clock, in time: an event that was
    in flight when the shutdown was recorded is no zombie."""
    if e.get("seq", 0) <= end.get("seq", 0):
        return False
    return e.get("t") is None or end.get("t") is None or e["t"] > end["t"]


def _dead_registrations(h: History) -> List[str]:
    reporters: Dict[str, List[Attempt]] = defaultdict(list)
    for att in h.ordered():
        for e in having(att.reports, "checkpoint", ()):
            reporters[e["checkpoint"]].append(att)
    out = []
    for reg in h.registered:
        atts = reporters.get(reg.get("checkpoint"), [])
        if not atts:
            out.append(f"checkpoint {reg.get('checkpoint')} registered at seq {reg.get('seq')} was reported by "
                       f"no attempt: nothing shows a live writer")
        elif all(a.end is not None and a.end.get("seq", 0) < reg.get("seq", 0) for a in atts):
            out.append(f"checkpoint {reg.get('checkpoint')} registered at seq {reg.get('seq')} was reported "
                       f"only by {h.label(atts[0].key)}, which ended at seq {atts[0].end.get('seq')}")
    return out
