"""Where an exploration's budget went, per gap (pure: read from the examples it ran).

explore.json's `spending`: for each gap (a property with its failure class, Example.gap) the
examples that showed it, before and after it was confirmed, those after it that showed nothing
beyond a failure the gap had already shown (the budget issue 50 asks not to spend), its repeats
and the candidates the ledger skipped for it; the time to each distinct finding, distinct findings
per hour, and the skipped candidates with why.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List

from ftharness.harness.run.explore_ledger import MAX_SKIPS_SHOWN, Ledger, parts


def signature_suffix(signature: str) -> str:
    """The workload part of a signature (' [data=ray_data]'), '' for none."""
    return signature[signature.index(" ["):] if " [" in signature else ""


def spending(examples: List[Any], findings: List[Any], ledger: Ledger, first_found: Dict[str, Any],
             wall_s: float, course_of: Callable[[List[Dict[str, Any]], Any], Any]) -> Dict[str, Any]:
    """`examples`: explore.Example of the session in the order run; `findings`: its FoundGaps;
    `first_found`: signature -> (seconds, example) as Explorer keeps it; `course_of`: the
    simulator's course of a schedule (its `tokens`: the failure classes it surely causes)."""
    search = [e for e in examples if e.purpose == "search"]
    names = list(dict.fromkeys([p for e in search if e.status == "FAIL" for p in parts(e.gap)]
                               + [p for g in findings for p in parts(g.example.gap)] + list(ledger.skips_by_gap)))
    gaps = []
    for name in names:
        runs = [e for e in search if e.status == "FAIL" and name in parts(e.gap)]
        conf = ledger.confirmed.get(name)
        # after it was confirmed, an example that showed it and no gap unconfirmed when it started
        after = [e for e in runs if conf is not None and e.at_s - e.wall_s >= conf
                 and all(ledger.confirmed.get(p, float("inf")) <= e.at_s - e.wall_s for p in parts(e.gap))]
        firsts = [t for sig, (t, _) in first_found.items()
                  if name in parts(sig[:len(sig) - len(signature_suffix(sig))])]
        again = known_again(runs, after, course_of)
        gaps.append({"gap": name, "examples": len(runs), "after_confirmed": len(after),
                     "after_confirmed_known": len(again),
                     "after_confirmed_known_examples": [e.index for e in again],
                     "repeats": sum(1 for e in examples if e.purpose == "confirm" and name in parts(e.gap)),
                     "skipped": ledger.skips_by_gap.get(name, 0), "confirmed_at_s": conf,
                     "first_found_s": min(firsts) if firsts else None,
                     "findings": [g.signature for g in findings if name in parts(g.example.gap)]})
    skipped = list(ledger.skipped.values())
    return {"gaps": gaps,
            "time_to_findings_s": [{"signature": g.signature, "s": g.first_found_s, "status": g.status}
                                   for g in sorted(findings, key=lambda g: g.first_found_s)],
            "distinct_findings": len(findings),
            "findings_per_hour": round(len(findings) * 3600.0 / wall_s, 2) if wall_s > 0 else None,
            "examples_run": len(search), "skipped_total": len(skipped),
            "skipped_by": {by: sum(1 for s in skipped if s["by"] == by) for by in ("simulator", "declared")},
            "skipped": skipped[:MAX_SKIPS_SHOWN]}


def known_again(runs: List[Any], after: List[Any], course_of: Callable[[List[Dict[str, Any]], Any], Any]) -> List[Any]:
    """Of `after` (the examples that showed a gap once it was confirmed), those that showed it
    with nothing beyond a failure it had already failed under: every fault token of theirs
    (es.fault_token: the failure class a kind surely causes, a kind with its arguments
    otherwise) was in an earlier example that showed the gap. The first example under a class
    of its own (a controller kill after worker kills) is a new gap, as issue 50 counts a gap:
    its property and its failure class."""
    seen: set = set()
    again = []
    for e in sorted(runs, key=lambda e: e.at_s):
        tokens = set(course_of(e.faults, e.workload).tokens)
        if e in after and tokens and tokens <= seen:
            again.append(e)
        seen |= tokens
    return again
