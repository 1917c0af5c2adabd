"""The properties ftharness judges a history by, one module each.

Each module of this package has a pure `check(events, context) -> CheckResult`
and, optionally, `applies(facts) -> bool`: whether a scenario expects it when
`expect.properties` is not given (without one it always does); see `base.py`.
Adding a property is one module beside these and one line in `REGISTRY`; the
verdict, the summary and the reports pick it up from here.
"""

from __future__ import annotations

import sys
from typing import Any, Dict, Iterable, List, Optional, Tuple

from ftharness.history.model import History, as_history
from ftharness.scenarios import forked_checks as forked
from ftharness.scenarios.properties import (bounded_lost_work, budget_accounting, exactly_once_restore,
                                  monotonic_counters, no_leftovers, no_zombie_writes, recovers, shard_reassignment)
from ftharness.scenarios.properties.base import Check, CheckResult, Events, Facts, PropertyContext, always, not_judged

#: property name -> its module, in the order summaries list them
REGISTRY = {
    "exactly_once_restore": exactly_once_restore,
    "budget_accounting": budget_accounting,
    "shard_reassignment": shard_reassignment,
    "no_zombie_writes": no_zombie_writes,
    "recovers": recovers,
    "bounded_lost_work": bounded_lost_work,
    "monotonic_counters": monotonic_counters,
    "no_leftovers": no_leftovers,
}
#: the entry-point group third-party properties are registered under (docs/plugins.md)
ENTRY_POINT_GROUP = "ftharness.properties"


def load_plugins(group: str = ENTRY_POINT_GROUP, taken: Iterable[str] = ()) -> Tuple[Dict[str, Any], List[str]]:
    """({name: property} for the properties installed distributions register under `group`,
    one line per entry point that could not be loaded). The entry point's name is the
    property's; it names a module or object with `check(events, context) -> CheckResult`, and
    optionally `applies(facts)`. Without `applies` a plugin property is judged only where a
    scenario names it in `expect.properties`, so installing a plugin changes no verdict."""
    from importlib.metadata import entry_points

    found: Dict[str, Any] = {}
    problems: List[str] = []
    try:
        eps = sorted(entry_points(group=group), key=lambda ep: ep.name)
    except Exception as e:  # noqa: BLE001 - a broken environment loads no plugin, and says so
        return {}, [f"{group}: entry points cannot be read ({type(e).__name__}: {e})"]
    for ep in eps:
        where = f"{group} entry point {ep.name} ({ep.value})"
        try:
            prop = ep.load()
        except BaseException as e:  # noqa: BLE001 - a plugin's SystemExit or KeyboardInterrupt at import is its own: one warning
            problems.append(f"{where}: not loaded ({type(e).__name__}: {e})")
            continue
        why = (f"the name {ep.name!r} is taken" if ep.name in set(taken) | set(found) else
               "a property name is a name such as my_property" if not ep.name.isidentifier() else
               "it has no callable check(events, context)" if not callable(getattr(prop, "check", None)) else None)
        if why:
            problems.append(f"{where}: not loaded ({why})")
            continue
        found[ep.name] = prop if callable(getattr(prop, "applies", None)) else _OnlyWhenNamed(prop)
    return found, problems


class _OnlyWhenNamed:
    """A plugin property without `applies`: expected only where a scenario names it."""

    def __init__(self, prop: Any):
        self.check = prop.check
        self.__doc__ = getattr(prop, "__doc__", None)

    @staticmethod
    def applies(facts: Facts) -> bool:
        return False


import ftharness.faults  # noqa: E402 - fault kinds first: a plugin module may hold a kind and a property
#: the fault kinds, loaded before the properties' plugins
FAULT_KINDS = ftharness.faults.FAULT_KINDS
_PLUGINS, PLUGIN_PROBLEMS = load_plugins(taken=REGISTRY)
for _line in PLUGIN_PROBLEMS:
    print(f"ftharness: warning: {_line}", file=sys.stderr)
REGISTRY.update(_PLUGINS)
#: the names of the properties plugins added
PLUGINS = tuple(_PLUGINS)

#: property name -> its check, in the same order
CHECKS: Dict[str, Check] = {name: module.check for name, module in REGISTRY.items()}
PROPERTIES = tuple(REGISTRY)
#: built-in properties judged only where a scenario names them (their `applies` is never true):
#: their evidence costs the run time, so it is recorded only when asked for
OPT_IN = ("no_leftovers",)

__all__ = ["CHECKS", "OPT_IN", "PROPERTIES", "REGISTRY", "CheckResult", "Facts", "applicable", "not_judged", "run_checks"]


def applicable(facts: Facts) -> List[str]:
    """The properties a scenario with these facts expects by default, in order."""
    return [name for name, module in REGISTRY.items() if getattr(module, "applies", always)(facts)]


def run_checks(events: Events, context: Optional[PropertyContext] = None,
               names: Optional[Iterable[str]] = None) -> Dict[str, CheckResult]:
    """Run the named checks (all by default) over one model of the history. A
    check that crashes on a malformed history judged nothing: it is not judged
    (never passed), with the error, and the others still run."""
    try:
        events = as_history(events)
    except Exception:  # noqa: BLE001 - each check meets the malformed history on its own, below
        pass
    names = list(names or CHECKS)
    context = context or {}
    # a long history: the costliest check in a forked child, beside the others (see forked.py)
    apart = forked.split_names(names, len(getattr(events, "events", ()))) if isinstance(events, History) else []
    pending = forked.start(lambda: {n: _run_one(n, events, context) for n in apart}) if apart else None
    results: Dict[str, CheckResult] = {}
    try:
        for name in names:
            if pending is None or name not in apart:
                results[name] = _run_one(name, events, context)
        theirs = pending.result() if pending is not None else None
    except BaseException:
        if pending is not None:
            pending.cancel()
        raise
    for name in names:   # (the child's, or here when it sent none)
        if name not in results:
            got = (theirs or {}).get(name)
            results[name] = got if isinstance(got, CheckResult) else _run_one(name, events, context)
    if isinstance(events, History):
        events.forget_check_caches()
    return {name: results[name] for name in names}


def _run_one(name: str, events: Events, context: PropertyContext) -> CheckResult:
    try:
        got = CHECKS[name](events, context)
    except Exception as e:  # noqa: BLE001 - a history we cannot judge is judged by nobody
        return not_judged(name, f"the check crashed ({type(e).__name__}: {str(e)[:200]})")
    if not isinstance(got, CheckResult):   # (a plugin's check that returns something else: its own INCONCLUSIVE)
        return not_judged(name, f"the check returned {type(got).__name__}, not a CheckResult")
    return got
