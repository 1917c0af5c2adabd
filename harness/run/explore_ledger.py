"""Explore's budget ledger: what each confirmed gap showed, and the candidates skipped because
they could only show it again.

A gap (a failed property, an unexpected outcome) is known once a confirming repeat showed it.
Every later candidate is asked, before it runs, what it could show beyond the known gaps (its
faults' declared failure classes, the properties it judges, the outcomes the model allows, its
budget edge: scenarios/explore_strategies.py `course`). One that brings nothing new is skipped
and recorded here with why; the report (reports/explore.py) shows how many examples went to each
gap and what was skipped. Split out of harness/run/explore.py, which asks it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from ftharness.scenarios import explore_strategies as es


#: skipped examples kept by name in explore.json (the count covers them all)
MAX_SKIPS_SHOWN = 200
#: examples a gap may mask after it is known: an example with a fault that surely shows the gap
#: beside faults not yet seen with it runs until this many such examples showed nothing beyond it
MASKED_RUNS = 1


@dataclass
class Evidence:
    """What a confirmed gap showed under one fault token (on one workload, with or without a
    restore): the examples that showed it, the properties they judged, the outcomes their model
    allowed and their budget edge. A candidate within these can only show the gap again."""

    signatures: set
    properties: set
    outcomes: set
    edge: float
    examples: List[int] = field(default_factory=list)

    def merged(self, other: "Evidence") -> "Evidence":
        return Evidence(self.signatures | other.signatures, self.properties | other.properties,
                        self.outcomes | other.outcomes, max(self.edge, other.edge),
                        sorted(set(self.examples) | set(other.examples)))


class Ledger:
    """Explore's budget: what confirmed gaps showed, and the candidates skipped because they could
    only show one of them again. A gap is a signature (the failed properties, an unexpected
    outcome; whatever the workload, Example.gap) with the failure that showed it
    (`es.fault_token`: the class a kind surely causes; the kind and its arguments otherwise).
    Decided before a run, from the candidate's `es.Course` only. Skipped:

    - *covered*: every token it brings showed that one gap, on its workload, with (or without)
      a restore as it has; it judges no property those examples did not, allows no other
      outcome, sits no nearer a budget edge, and the simulator (where it plays the schedule)
      expects the end the model does;
    - *masked* (its weight lowered, not at once): as above, except that beside a failure that
      surely shows the gap it brings faults not seen with it; such candidates run until
      MASKED_RUNS of them showed nothing beyond the gap (the gap fails their runs whatever the
      other faults do, so what those could show is shown less and less).

    Anything else runs: a failure class or a fault no confirmed gap was seen with (and nothing
    beside it that surely shows one), another property, another workload, outcome or budget edge."""

    def __init__(self):
        self.confirmed: Dict[str, float] = {}          # gap (a part of Example.gap) -> seconds into the exploration
        self.evidence: Dict[tuple, Evidence] = {}      # (token, workload text, restores) -> Evidence
        self.masked: Dict[str, int] = {}               # gap -> examples with unseen faults beside it, nothing more
        self.skipped: Dict[str, Dict[str, Any]] = {}   # scenario name -> the skip's record
        self.skips_by_gap: Dict[str, int] = {}

    def known(self, gap: str) -> bool:
        """Whether every part of `gap` (a property, an unexpected outcome) is a confirmed gap: two
        known gaps shown together are no new one."""
        return bool(gap) and all(p in self.confirmed for p in parts(gap))

    def _found(self, token: str, text: str, restores: Optional[bool]) -> Optional[Evidence]:
        """The evidence for `token` on a course with (or without) a restore; for a course whose
        trigger does not say (a time, a checkpoint being written), the evidence of either."""
        ev = self.evidence.get((token, text, restores))
        if restores is None:
            for other in (True, False):
                more = self.evidence.get((token, text, other))
                if more is not None:
                    ev = more if ev is None else ev.merged(more)
        return ev

    def learn(self, example: Any, course: "es.Course") -> None:   # example: an explore.Example
        """An example that failed with confirmed gaps (and nothing more): every token it brought
        shows them when at most one of them was not known to show a part of them already (one new
        token, proven to add nothing; two new ones could each be what failed); a new token beside
        known ones counts the example as one the gaps masked."""
        sig, text = example.gap, es.workload_text(example.workload or {})
        if example.status != "FAIL" or not self.known(sig) or not course.tokens:
            return
        shown = set(parts(sig))
        new = [t for t in course.tokens
               if not any(set(parts(g)) <= shown for g in getattr(self._found(t, text, course.restores), "signatures", ()))]
        if new and len(new) < len(course.tokens):
            for p in parts(sig):
                self.masked[p] = self.masked.get(p, 0) + 1
        if len(new) > 1:
            return
        for t in course.tokens:
            ev = self.evidence.setdefault((t, text, course.restores), Evidence(set(), set(), set(), 0.0))
            ev.signatures.add(sig)
            ev.properties |= set(course.properties)
            ev.outcomes |= set(course.outcomes)
            ev.edge = max(ev.edge, course.edge)
            if example.index not in ev.examples:
                ev.examples.append(example.index)

    def redundant(self, course: "es.Course", workload: Optional[Dict[str, Any]]) -> Optional[tuple]:
        """(the gaps it could show, why) when the candidate is not to run (covered, or masked past
        its share); else None."""
        if not course.tokens:
            return None
        if course.predicted is not None and course.predicted not in course.outcomes:
            return None        # the simulator expects an end the model does not allow: new ground
        text = es.workload_text(workload or {})
        known = {t: ev for t in course.tokens for ev in [self._found(t, text, course.restores)] if ev is not None}
        if not known:
            return None
        gaps = sorted({p for ev in known.values() for g in ev.signatures for p in parts(g)})
        sig = "; ".join(gaps)
        if (not set(course.properties) <= set().union(*(ev.properties for ev in known.values()))
                or not set(course.outcomes) <= set().union(*(ev.outcomes for ev in known.values()))
                or course.edge > max(ev.edge for ev in known.values())):
            return None        # another property judged, another outcome allowed, a nearer budget edge
        # (tokens that showed different gaps may show them together, which is no new gap; what
        # they could do to each other beyond that, the model marks as a budget edge)
        shown = sorted({i for ev in known.values() for i in ev.examples})
        where = (f" ({'with' if course.restores else 'without'} a restore)" if course.restores is not None else "")
        seen = f"examples {', '.join(map(str, shown[:5]))}{', ...' if len(shown) > 5 else ''}"
        if len(known) == len(course.tokens):
            return sig, (f"{' + '.join(_token_text(t) for t in sorted(course.tokens))}{where} showed {sig} "
                         f"({seen}) judging the same properties: it could only show it again")
        sure = sorted(t for t in known if t.startswith("class:"))
        unseen = sorted(set(course.tokens) - set(known))
        if not sure:
            return None        # nothing here surely shows the gap: what it brings may show another
        masked = max(self.masked.get(p, 0) for p in gaps)
        if masked < MASKED_RUNS:
            return None        # its weight is lowered, not yet spent: it runs
        return sig, (f"its {' + '.join(_token_text(t)[2:] for t in sure)}{where} surely shows {sig} ({seen}), and "
                     f"{masked} examples with other faults beside it showed nothing beyond it "
                     f"(here: {', '.join(_token_text(t) for t in unseen)})")

    def skip(self, name: str, faults, workload, sig: str, why: str, by: str, stage: str, at_s: float) -> bool:
        """Record one skipped candidate (once per scenario); True when it was new."""
        if name in self.skipped:
            return False
        self.skipped[name] = {"name": name, "faults": faults, "workload": dict(workload or {}), "gap": sig,
                              "why": why, "by": by, "stage": stage, "at_s": round(at_s, 3)}
        for p in sig.split("; "):
            self.skips_by_gap[p] = self.skips_by_gap.get(p, 0) + 1
        return True


def parts(gap: str) -> List[str]:
    """The gaps a signature (without its workload) names: each failed property, an unexpected outcome."""
    return [p for p in gap.split("+") if p]


def covered(gap: str, known) -> bool:
    """Whether every part of `gap` is a part of a gap in `known`: known gaps shown together."""
    have = {p for g in known for p in parts(g)}
    return bool(gap) and all(p in have for p in parts(gap))


def _token_class(token: str) -> Optional[str]:
    return token[len("class:"):].split(" ")[0] if token.startswith("class:") else None


def _token_text(token: str) -> str:
    """'a worker_group failure', or the fault with its arguments."""
    if token.startswith("class:"):
        return f"a {token[len('class:'):]} failure"
    try:
        own = json.loads(token[len("kind:"):])
        return own.pop("kind") + (f" {own}" if own else "")
    except (ValueError, KeyError, AttributeError):
        return token


