"""The figures of a mutation campaign: kill rates, the rules that refused, the survivors' classes.

A part of the mutation engine (reports/mutation.py re-exports `Score`): the outcomes of a campaign
counted per operator, per rule and per edited field, with the generic rules set aside, for
`benchmarks/mutation_score.py` and the tests. Pure.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

from ftharness.reports.mutation_judging import GENERIC, Outcome, field_key, is_generic


@dataclass
class Score:
    outcomes: List[Outcome]
    took_s: float = 0.0
    sample: Optional[Dict[str, Any]] = None

    def _of(self, pred: Callable[[Outcome], bool]) -> List[Outcome]:
        return [o for o in self.outcomes if pred(o)]

    @property
    def controls(self) -> List[Outcome]:
        return self._of(lambda o: o.mutant.control)

    @property
    def controls_wrong(self) -> List[Outcome]:
        return self._of(lambda o: o.mutant.control and o.verdict != "PASS")

    @property
    def equivalent(self) -> List[Outcome]:
        return self._of(lambda o: not o.mutant.control and o.mutant.equivalent is not None)

    @property
    def judged(self) -> List[Outcome]:
        """The non-equivalent mutants: each must not PASS."""
        return self._of(lambda o: not o.mutant.control and o.mutant.equivalent is None)

    @property
    def survivors(self) -> List[Outcome]:
        return [o for o in self.judged if o.verdict == "PASS"]

    @property
    def killed(self) -> List[Outcome]:
        return [o for o in self.judged if o.verdict != "PASS"]

    @property
    def semantic_killed(self) -> List[Outcome]:
        """Killed with at least one semantic reason."""
        return [o for o in self.killed if o.semantic_killer is not None]

    @property
    def generic_only(self) -> List[Outcome]:
        """Killed by generic reasons only (the record disagreeing with itself, nothing about what it means)."""
        return [o for o in self.killed if o.semantic_killer is None]

    @property
    def kill_rate(self) -> float:
        judged = self.judged
        return (len(judged) - len(self.survivors)) / len(judged) if judged else 1.0

    @property
    def semantic_rate(self) -> float:
        """The share of the non-equivalent mutants that a semantic rule refuses."""
        judged = self.judged
        return len(self.semantic_killed) / len(judged) if judged else 1.0

    def by_killer(self) -> Counter:
        """The first reason of each kill, generic rules included."""
        return Counter(o.killer for o in self.killed)

    def by_rule(self) -> Counter:
        """The first *semantic* reason of each kill (the generic rules set aside)."""
        return Counter(o.semantic_killer for o in self.semantic_killed)

    def by_generic(self) -> Counter:
        """The first reason of each kill that only generic rules refused."""
        return Counter(o.killer for o in self.generic_only)

    def _rows(self, key: Callable[[Outcome], str]) -> List[Tuple[str, int, int, int, int, int]]:
        rows: Dict[str, List[int]] = defaultdict(lambda: [0, 0, 0, 0])
        for o in self.judged:
            r = rows[key(o)]
            r[0] += 1
            r[1] += o.verdict != "PASS"
            r[2] += o.verdict != "PASS" and o.semantic_killer is not None
            r[3] += o.verdict != "PASS" and o.semantic_killer is None
        return [(k, n, kd, s, g, n - kd) for k, (n, kd, s, g) in sorted(rows.items())]

    def table(self) -> List[Tuple[str, int, int, int, int, int]]:
        """(operator, judged, killed, killed by a semantic rule, killed by generic rules only, surviving)."""
        return self._rows(lambda o: o.mutant.operator)

    def by_field(self) -> List[Tuple[str, int, int, int, int, int]]:
        """As `table`, per edited kind.field (list indices as [])."""
        return self._rows(lambda o: field_key(o.mutant.kind, o.mutant.field))

    def by_kind(self) -> List[Tuple[str, int, int]]:
        """(event kind, judged, surviving) per edited kind."""
        return [(k, n, s) for k, n, _, _, _, s in self._rows(lambda o: o.mutant.kind)]

    def classes(self) -> List[Dict[str, Any]]:
        """The survivors grouped by operator x kind x field, largest first, each with its examples."""
        groups: Dict[Tuple[str, str, str], List[Outcome]] = defaultdict(list)
        for o in self.survivors:
            groups[(o.mutant.operator, o.mutant.kind, o.mutant.field)].append(o)
        return [{"operator": op, "kind": kind, "field": fld, "count": len(os_),
                 "sources": sorted({o.mutant.source for o in os_}),
                 "examples": [o.mutant.name for o in os_[:3]]}
                for (op, kind, fld), os_ in sorted(groups.items(), key=lambda x: (-len(x[1]), x[0]))]

    def generic_only_classes(self) -> List[Dict[str, Any]]:
        """The generic-only kills grouped by operator x kind x field (what no semantic rule reads)."""
        groups: Dict[Tuple[str, str, str], List[Outcome]] = defaultdict(list)
        for o in self.generic_only:
            groups[(o.mutant.operator, o.mutant.kind, o.mutant.field)].append(o)
        return [{"operator": op, "kind": kind, "field": fld, "count": len(os_),
                 "killers": dict(Counter(o.killer for o in os_)), "examples": [o.mutant.name for o in os_[:2]]}
                for (op, kind, fld), os_ in sorted(groups.items(), key=lambda x: (-len(x[1]), x[0]))]

    def to_json(self) -> Dict[str, Any]:
        judged, killed = self.judged, self.killed
        cols = ("judged", "killed", "semantic", "generic_only", "surviving")
        return {
            "took_s": round(self.took_s, 1),
            "sample": self.sample,
            "generic_rules": sorted(GENERIC),
            "totals": {
                "mutants": len(self.outcomes) - len(self.controls),
                "equivalent": len(self.equivalent),
                "equivalent_by_rule": dict(Counter(o.mutant.equivalent for o in self.equivalent).most_common()),
                "equivalent_but_refused": sum(o.verdict != "PASS" for o in self.equivalent),
                "judged": len(judged), "killed": len(killed), "surviving": len(self.survivors),
                "semantic_killed": len(self.semantic_killed), "generic_only": len(self.generic_only),
                "kill_rate": round(self.kill_rate, 4), "semantic_rate": round(self.semantic_rate, 4),
                # the same rate with one process's identity rule (model:emitter) counted as semantic
                "semantic_rate_emitter_semantic": round(
                    sum(1 for o in killed if any(not is_generic(c) or c == "model:emitter" for c in o.codes))
                    / len(judged), 4) if judged else 1.0,
                "verdicts": dict(Counter(o.verdict for o in judged)),
                "controls": len(self.controls), "controls_wrong": len(self.controls_wrong),
            },
            "first_killer": dict(self.by_killer().most_common()),
            "per_rule": dict(self.by_rule().most_common()),
            "generic_only_by_killer": dict(self.by_generic().most_common()),
            "per_operator": {r[0]: dict(zip(cols, r[1:])) for r in self.table()},
            "per_field": {r[0]: dict(zip(cols, r[1:])) for r in self.by_field()},
            "survivor_classes": self.classes(),
            "generic_only_classes": self.generic_only_classes(),
            "survivors": [o.mutant.name for o in self.survivors],
            "controls_wrong": [{"name": o.mutant.name, "verdict": o.verdict, "reasons": o.reasons[:3]}
                               for o in self.controls_wrong],
            "other_reasons": sorted({r[:160] for o in self.outcomes for r, c in zip(o.reasons, o.codes)
                                     if c == "other"})[:30],
            "equivalent_refused": [{"name": o.mutant.name, "rule": o.mutant.equivalent, "verdict": o.verdict,
                                    "killer": o.killer} for o in self.equivalent if o.verdict != "PASS"][:200],
        }
