"""The properties ftharness judges a history by, one module each.

Each module of this package has a pure `check(events, context) -> CheckResult`
and, optionally, `applies(facts) -> bool`: whether a scenario expects it when
`expect.properties` is not given (without one it always does); see `base.py`.
Adding a property is one module beside these and one line in `REGISTRY`; the
verdict, the summary and the reports pick it up from here.
"""

from __future__ import annotations

from typing import Dict, Iterable, List, Optional

from ftharness.history.model import as_history
from ftharness.scenarios.properties import (bounded_lost_work, budget_accounting, exactly_once_restore, monotonic_counters,
                                  no_zombie_writes, recovers, shard_reassignment)
from ftharness.scenarios.properties.base import Check, CheckResult, Events, Facts, always, not_judged

#: property name -> its module, in the order summaries list them
REGISTRY = {
    "exactly_once_restore": exactly_once_restore,
    "budget_accounting": budget_accounting,
    "shard_reassignment": shard_reassignment,
    "no_zombie_writes": no_zombie_writes,
    "recovers": recovers,
    "bounded_lost_work": bounded_lost_work,
    "monotonic_counters": monotonic_counters,
}
#: property name -> its check, in the same order
CHECKS: Dict[str, Check] = {name: module.check for name, module in REGISTRY.items()}
PROPERTIES = tuple(REGISTRY)

__all__ = ["CHECKS", "PROPERTIES", "REGISTRY", "CheckResult", "Facts", "applicable", "not_judged", "run_checks"]


def applicable(facts: Facts) -> List[str]:
    """The properties a scenario with these facts expects by default, in order."""
    return [name for name, module in REGISTRY.items() if getattr(module, "applies", always)(facts)]


def run_checks(events: Events, context: Optional[dict] = None,
               names: Optional[Iterable[str]] = None) -> Dict[str, CheckResult]:
    """Run the named checks (all by default) over one model of the history. A
    check that crashes on a malformed history judged nothing: it is not judged
    (never passed), with the error, and the others still run."""
    try:
        events = as_history(events)
    except Exception:  # noqa: BLE001 - each check meets the malformed history on its own, below
        pass
    results = {}
    for name in names or CHECKS:
        try:
            results[name] = CHECKS[name](events, context or {})
        except Exception as e:  # noqa: BLE001 - a history we cannot judge is judged by nobody
            results[name] = not_judged(name, f"the check crashed ({type(e).__name__}: {str(e)[:200]})")
    return results
