"""Chaos Toolkit probes over the live run's history: training progress, the
current attempt, budget use, and each ftharness property over the history so far."""

from __future__ import annotations

import time
from typing import Any, Dict

from ftharness.harness.frontends.ctk.session import current

__all__ = ["training_progresses", "current_step", "current_attempt", "budget_use", "property_holds"]


def training_progresses(within_s: float = 60.0) -> bool:
    """True once training completes a new step within `within_s` (or has finished)."""
    session = current()
    start = session.progress()["step"]
    deadline = time.time() + within_s
    while time.time() < deadline:
        if session.progress()["step"] > start or session.fit_done():
            return True
        time.sleep(0.2)
    return False


def current_step() -> int:
    """The last step training reached (0 before the first)."""
    return int(current().progress()["step"])


def current_attempt() -> int:
    """The attempt the controller runs now (1 for the first; it grows with each restart)."""
    return int(current().progress()["attempt"])


def budget_use() -> Dict[str, int]:
    """Failures charged so far to each Ray Train budget."""
    from ftharness.scenarios.verdict import budgets_used

    return budgets_used(current().events())


def property_holds(name: str) -> bool:
    """No violation of one ftharness property (exactly_once_restore, budget_accounting, ...)
    in the history so far. A property that has nothing to judge yet (no outcome before
    the run ends) holds here; the run's verdict at the end judges it on its evidence."""
    from ftharness.scenarios.properties import run_checks
    from ftharness.scenarios.verdict import check_context

    session = current()
    events = session.events()
    # the verdict's own rules for data, workload and the expect keys; no outcome and no
    # fault landings yet (those are the end-of-run verdict's)
    full = check_context(session.scenario, events, {}, None)
    context: Dict[str, Any] = {k: full[k] for k in ("failure_config", "data", "workload", "max_lost_steps",
                                                    "monotonic")}
    return run_checks(events, context, [name])[name].status != "failed"
