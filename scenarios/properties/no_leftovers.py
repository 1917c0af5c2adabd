"""no_leftovers: nothing of a run is still alive on the cluster after its fit() returned.

Judged from the `train_leftovers` event the runner records after the last fit() returns (on a
cluster ftharness started, where every Train actor and placement group is this run's): each
Ray Train actor (controller, workers, their helpers, the detached PlacementGroupCleaner) and
each placement group still there `settle_s` after fit() returned is a violation: it holds
resources (or a detached process) for the life of the cluster. A run without the sample is not
judged (absence is no pass). Judged only where a scenario names it: the sample waits for the
run's actors to end, so it is taken only when asked (harness/run/leftovers.py).
"""

from __future__ import annotations

from typing import List

from ftharness.history.columns import non_steps
from ftharness.history.model import as_history
from ftharness.scenarios.properties.base import CheckResult, Events, Facts, PropertyContext, not_judged, result

NAME = "no_leftovers"


def applies(facts: Facts) -> bool:
    """Opt-in: named in `expect.properties` (or pinned in `expect.violations`)."""
    return False


def check(events: Events, context: PropertyContext) -> CheckResult:
    """Every sample after the last fit() ended lists no actor and no placement group."""
    rows = list(non_steps(as_history(events).events))
    ends = [e for e in rows if e.get("kind") == "run_end"]
    if not ends:
        return not_judged(NAME, "no fit() ended: nothing to look for after it")
    last = max(ends, key=lambda e: e.get("seq", 0))
    samples = [e for e in rows if e.get("kind") == "train_leftovers" and e.get("seq", 0) > last.get("seq", 0)]
    if not samples:
        return not_judged(NAME, "no train_leftovers sample after the last fit() ended (taken only on a "
                                "cluster ftharness started)")
    violations: List[str] = []
    for s in samples:
        settle = s.get("settle_s")
        actors, groups = s.get("actors"), s.get("placement_groups")
        if not isinstance(actors, list) or not isinstance(groups, list):
            return not_judged(NAME, f"the train_leftovers sample at seq {s.get('seq')} holds no actor or "
                                    f"placement-group list")
        for a in actors:
            cls = a.get("class_name") if isinstance(a, dict) else a
            pid = a.get("pid") if isinstance(a, dict) else None
            violations.append(f"a {cls} actor{f' (pid {pid})' if pid else ''} still alive {settle} s after "
                              f"fit {last.get('fit_index')} returned (sample at seq {s.get('seq')})")
        for g in groups:
            state = g.get("state") if isinstance(g, dict) else g
            violations.append(f"a placement group ({state}) not removed {settle} s after fit "
                              f"{last.get('fit_index')} returned (sample at seq {s.get('seq')})")
    s = samples[-1]
    summary = (f"nothing of the run alive after fit {last.get('fit_index')} returned "
               f"(sampled {s.get('waited_s')} s after, up to {s.get('settle_s')} s)")
    return result(NAME, violations, [], summary, standing=violations)
