"""`ftharness bisect`: the first release where a scenario's result changes (pure: no Ray).

The releases of a range (releases.ALL_RELEASES, patches included) are searched
by binary search for the first one whose result differs from the oldest one's.
A result is a probe's signature: its verdict, the run's outcome and the failures
charged to each budget. A probe runs the scenario `repeat` times; when its runs
disagree the probe is flaky, and the search stops there and says so, with the
interval it had narrowed the change to, rather than let one flaky run move the
boundary. The search assumes one change in the range (as git bisect does); a
range whose two ends agree is reported as "no change" (a change and its revert
inside it are not seen, and the report says the ends were compared).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ftharness import releases
from ftharness.errors import ScenarioError

Signature = Tuple[str, str, Tuple[Tuple[str, int], ...]]

#: Consecutive releases whose Ray Train code is byte-identical: `diff -r` of python/ray/train
#: (ray/train/v2 and the rest of ray/train) between the two wheels (`pip download ray==X --no-deps`),
#: read for every consecutive pair of releases.ALL_RELEASES on 2026-12-06. Every patch release
#: x.y.0 -> x.y.z is identical, and so is 2.58.1 -> 2.59.0; every minor boundary differs (2.51.2 ->
#: 2.52.0: 584 changed lines under ray/train/v2, ..., 2.59.0 -> 2.60.0: 451). bisect probes one
#: release of each run of identical ones (the oldest) and says which it skipped; `ftharness matrix`
#: runs every release when Ray Core (C++, not compared here) is suspected.
SAME_TRAIN = (("2.51.0", "2.51.1"), ("2.51.1", "2.51.2"), ("2.52.0", "2.52.1"), ("2.54.0", "2.54.1"),
              ("2.55.0", "2.55.1"), ("2.56.0", "2.56.1"), ("2.57.0", "2.57.1"), ("2.58.0", "2.58.1"),
              ("2.58.1", "2.59.0"))
#: Of those, the pairs whose python/ray/data differs (changed lines under ray/data, same diff):
#: a scenario whose workload reads a Ray Data dataset probes both releases of these.
DATA_DIFFERS = {("2.54.0", "2.54.1"): 5, ("2.56.0", "2.56.1"): 147, ("2.57.0", "2.57.1"): 13,
                ("2.58.0", "2.58.1"): 13, ("2.58.1", "2.59.0"): 3505}


def collapse(versions: Sequence[str], uses_data: bool = False) -> Tuple[List[str], Dict[str, str]]:
    """(releases to probe, {skipped release: why}): a release whose Ray Train code is identical to
    the previous one in `versions` (SAME_TRAIN; for a Ray Data workload, its Ray Data code too) is
    skipped and stands with the one probed before it. Ray Core (C++) may still differ: the sentence
    of each skip says what was compared."""
    same = set(SAME_TRAIN) - (set(DATA_DIFFERS) if uses_data else set())
    probe: List[str] = []
    skipped: Dict[str, str] = {}
    for v in versions:
        if probe and _joined(probe[-1], v, versions, same):
            what = "ray/train and ray/data" if uses_data else "ray/train"
            skipped[v] = f"{what} identical to {probe[-1]}'s"
        else:
            probe.append(v)
    return probe, skipped


def _joined(rep: str, v: str, versions: Sequence[str], same: set) -> bool:
    """Every consecutive pair from `rep` to `v` in `versions` is identical."""
    i, j = versions.index(rep), versions.index(v)
    return all((versions[k], versions[k + 1]) in same for k in range(i, j))


def skipped_lines(skipped: Dict[str, str]) -> List[str]:
    """bisect's lines for the releases it does not probe, one per release probed in their stead."""
    by: Dict[str, List[str]] = {}
    for v, why in skipped.items():
        by.setdefault(why, []).append(v)
    return [f"bisect: skipped Ray {', '.join(vs)}: {why} (the diff of the wheels; harness/matrix/bisect.py "
            f"SAME_TRAIN); `ftharness matrix` runs them all" for why, vs in by.items()]
#: verdicts of a run that did not judge the scenario (no summary): such a probe stops the search
NOT_RUN = ("REFUSED", "ERROR", "TIMEOUT", "NO ENV", "INTERRUPTED")


def signature(row: Dict[str, Any]) -> Signature:
    """(verdict, outcome, charged budgets) of one run (a matrix cell's row)."""
    s = row.get("summary") or {}
    charged = tuple(sorted((b, int(n)) for b, n in (s.get("budgets") or {}).items() if n))
    return (str(row.get("verdict")), str(s.get("outcome") or "-"), charged)


def describe(sig: Optional[Signature]) -> str:
    if sig is None:
        return "flaky"
    verdict, outcome, charged = sig
    budgets = ", ".join(f"{b} {n}" for b, n in charged) or "none"
    return f"{verdict} {outcome}, charged: {budgets}"


@dataclass
class Probe:
    """One release's runs and what they agree on (None: they disagree, the probe is flaky)."""

    ray: str
    rows: List[Dict[str, Any]]
    signature: Optional[Signature]
    seconds: float = 0.0
    not_run: Optional[str] = None      # why a run did not judge the scenario (refused, error, ...)

    @property
    def flaky(self) -> bool:
        return self.signature is None and self.not_run is None

    @property
    def stops(self) -> bool:
        return self.signature is None

    def line(self) -> str:
        if self.not_run:
            runs = f"NOT RUN ({self.not_run})"
        elif self.flaky:
            runs = "FLAKY (" + "; ".join(describe(signature(r)) for r in self.rows) + ")"
        else:
            runs = describe(self.signature)
        return f"Ray {self.ray}: {runs} [{len(self.rows)} run(s), {self.seconds:.0f} s]"


def judge(ray: str, rows: List[Dict[str, Any]], seconds: float = 0.0) -> Probe:
    bad = next((r for r in rows if r.get("verdict") in NOT_RUN), None)
    if bad is not None:
        return Probe(ray, rows, None, seconds, f"{bad.get('verdict')}: {bad.get('error') or 'no summary'}"[:200])
    sigs = {signature(r) for r in rows}
    return Probe(ray, rows, next(iter(sigs)) if len(sigs) == 1 else None, seconds)


@dataclass
class Result:
    """What the search found: `boundary` is the first release whose result differs from
    `releases[0]`'s (None: none found), `last_same` the release before it."""

    releases: List[str]
    probes: List[Probe] = field(default_factory=list)
    boundary: Optional[str] = None
    last_same: Optional[str] = None
    flaky: Optional[str] = None          # the probe that stopped the search
    interval: Optional[Tuple[str, str]] = None   # where the change lies when the search stopped early

    def sentence(self) -> str:
        first, last = self.releases[0], self.releases[-1]
        by = {p.ray: p for p in self.probes}
        if self.flaky:
            lo, hi = self.interval or (first, last)
            why = (f"its runs did not judge the scenario ({by[self.flaky].not_run})" if by[self.flaky].not_run
                   else "flaky, its runs disagree")
            return (f"bisect: stopped: Ray {self.flaky}: {why}; the change lies in "
                    f"{lo}..{hi}; rerun with more --repeat or a narrower --ray")
        if self.boundary is None:
            return (f"bisect: no change from Ray {first} to {last}: both {describe(by[first].signature)} "
                    f"(the ends were compared; a change undone inside the range is not seen)")
        return (f"bisect: first change at Ray {self.boundary}: {describe(by[self.boundary].signature)}; "
                f"Ray {self.last_same} and before: {describe(by[self.last_same].signature)} "
                f"({len(self.probes)} of {len(self.releases)} releases run)")


def search(versions: Sequence[str], probe: Callable[[str], Probe],
           say: Callable[[str], None] = print) -> Result:
    """Binary search over `versions` (oldest first) for the first whose probe differs from the first's."""
    res = Result(list(versions))

    def run(i: int) -> Probe:
        p = probe(versions[i])
        res.probes.append(p)
        say(f"bisect: probe {len(res.probes)}: {p.line()}")
        return p

    lo_p = run(0)
    if lo_p.stops:
        res.flaky, res.interval = lo_p.ray, (versions[0], versions[-1])
        return res
    if len(versions) == 1:
        return res
    hi_p = run(len(versions) - 1)
    if hi_p.stops:
        res.flaky, res.interval = hi_p.ray, (versions[0], versions[-1])
        return res
    if hi_p.signature == lo_p.signature:
        return res
    lo, hi = 0, len(versions) - 1      # invariant: lo is as the first, hi differs
    while hi - lo > 1:
        mid = (lo + hi) // 2
        p = run(mid)
        if p.stops:
            res.flaky, res.interval = p.ray, (versions[lo], versions[hi])
            return res
        if p.signature == lo_p.signature:
            lo = mid
        else:
            hi = mid
    res.boundary, res.last_same = versions[hi], versions[lo]
    return res


def parse_range(text: Optional[str]) -> List[str]:
    """`--ray A..B` (versions or minors: a minor starts at its first patch and ends at its last),
    the releases of releases.ALL_RELEASES in it, oldest first; default: all of them."""
    every = list(releases.ALL_RELEASES)
    if not text:
        return every
    m = re.fullmatch(r"\s*([0-9.]+)\s*\.\.\s*([0-9.]+)\s*", text)
    if not m:
        raise ScenarioError(f"--ray: {text}: expected A..B, e.g. 2.51.0..2.60.0 or 2.56..2.58")
    lo, hi = _one(m.group(1), every, first=True), _one(m.group(2), every, first=False)
    i, j = every.index(lo), every.index(hi)
    if i >= j:
        raise ScenarioError(f"--ray: {text}: {lo} is not older than {hi}; expected OLDER..NEWER")
    return every[i:j + 1]


def _one(item: str, every: List[str], first: bool) -> str:
    allowed = f"allowed: {every[0]} to {every[-1]} ({releases.RANGE_TEXT}, patches included)"
    if re.fullmatch(r"\d+\.\d+", item):
        matching = [v for v in every if v.startswith(item + ".")]
        if not matching:
            raise ScenarioError(f"--ray: {item} is not a supported release; {allowed}")
        return matching[0] if first else matching[-1]
    if item not in every:
        raise ScenarioError(f"--ray: {item} is not a supported release; {allowed}")
    return item
