"""monotonic_counters: the counters the job reports in its metrics and the
scenario declares monotonic (`monotonic`, from `expect.monotonic`) never
decrease over the kept lineage, and no restart resets one below its value at
the restored checkpoint's step.

The values are those of the `report` events' `metrics` (numeric scalars; a
bool is no counter), compared per rank in lineage order: a step thrown away by
a rollback is not compared, so going back to the restored checkpoint's value
is no decrease, but reporting less than it after the restore is.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Dict, List, Optional, Tuple

from ftharness.history.model import History, Key, as_history
from ftharness.scenarios.properties.base import (CheckResult, Events, Facts, PropertyContext, lineage, not_judged, result,
                                                 segments)


def applies(facts: Facts) -> bool:
    return facts.monotonic


def check(events: Events, context: PropertyContext) -> CheckResult:
    """Each declared counter never decreases over the kept lineage, restarts included."""
    names = [n for n in context.get("monotonic") or [] if isinstance(n, str)]
    if not names:
        return not_judged("monotonic_counters", "no counter was declared monotonic (expect.monotonic)")
    h = as_history(events)
    by_step: Dict[Tuple[Key, object], List[dict]] = defaultdict(list)
    present = set()
    for att in h.ordered():
        for e in att.reports:
            metrics = e.get("metrics")
            if isinstance(metrics, dict):
                present.update(n for n in names if n in metrics)
                by_step[(att.key, e.get("step"))].append(e)
    never = [n for n in names if n not in present]
    if not present:
        return not_judged("monotonic_counters", f"no report carried a declared counter ({', '.join(names)})")
    if not any(a.steps for a in h.ordered()):
        return not_judged("monotonic_counters", "no step was recorded: the lineage of the reports is unknown")
    kept, _ = lineage(h)
    violations: List[str] = []
    findings: List[str] = []
    last: Dict[Tuple[object, str], Tuple[float, int, Key]] = {}   # (rank, name) -> value, step, attempt
    compared = 0
    judged: set = set()   # names compared at least once
    odd: Dict[str, List[str]] = {}   # name -> values that are no number, not compared
    for s in sorted(kept):
        key = kept[s]
        if key is None:
            continue
        for e in by_step.get((key, s), []):
            metrics, rank = e.get("metrics") or {}, e.get("rank")
            for name in names:
                if name not in metrics:
                    continue
                v = metrics[name]
                if not _numeric(v):
                    odd.setdefault(name, []).append(f"{h.label(key)} rank {rank} step {s}: {v!r}")
                    continue
                prev = last.get((rank, name))
                if prev is not None:
                    compared += 1
                    judged.add(name)
                    if v < prev[0]:
                        violations.append(_decrease(h, name, rank, v, s, key, prev))
                last[(rank, name)] = (v, s, key)
    if not compared:
        return not_judged("monotonic_counters", f"no declared counter was reported at two steps of the kept "
                                                f"lineage ({', '.join(sorted(present, key=names.index))})")
    findings += [f"{name}: {len(vs)} value(s) not a number, not compared (e.g. {vs[0]})"
                 for name, vs in odd.items()]
    if never:
        findings.append(f"declared but never reported: {', '.join(never)}")
    summary = (f"{', '.join(sorted(judged, key=names.index))} never decreased over the kept lineage "
               f"({segments(h, kept)}); {compared} consecutive report(s) compared per rank")
    within = [v for v in violations if " went down from " in v]   # both reports of one attempt are present
    out = result("monotonic_counters", violations, findings, summary, within)
    if never:
        out.explanation += f"; declared but never reported: {', '.join(never)}"
    return out


def _numeric(v) -> bool:
    return type(v) in (int, float) and not (isinstance(v, float) and math.isnan(v))


def _decrease(h: History, name: str, rank, v, s: int, key: Key, prev: Tuple[float, int, Key]) -> str:
    pv, ps, pkey = prev
    if pkey != key:
        restored = _restored_step(h, key)
        return (f"{h.label(key)} rank {rank} reset {name} after restoring step {restored}: {v} at step {s}, "
                f"below {pv} at step {ps} ({h.label(pkey)})")
    return f"{h.label(key)} rank {rank}: {name} went down from {pv} at step {ps} to {v} at step {s}"


def _restored_step(h: History, key: Key) -> Optional[int]:
    att = h.attempts.get(key)
    return None if att is None else att.restored_step()
