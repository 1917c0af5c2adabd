"""Ray Train's failure budgets (and TorchElastic's one), the FailureConfig field that limits each,
and how many failures a history charged to each: the names every reader of a run's failures
shares (the model's budget use, the properties, the simulator, the reports).

A part of the history model (history/model.py re-exports it). Pure.
"""

from __future__ import annotations

from typing import Dict, Iterable

from ftharness.history.columns import non_steps
from ftharness.history.model_parts import Event

#: Ray Train's failure budgets, in the order its FailureConfig lists them
BUDGETS = ("worker_group", "preemption", "controller")
#: the budget class of a failure that is not retryable (charged to no budget)
NOT_RETRYABLE = "none"
#: budget -> the FailureConfig field that limits it
LIMIT_FIELD: Dict[str, str] = {
    "worker_group": "max_failures",
    "preemption": "max_preemption_failures",
    "controller": "controller_failure_limit",
}

#: TorchElastic's one budget (`--max-restarts`, counted by each node's agent), for torchrun runs
TORCHRUN_BUDGET = "max_restarts"


def charged(events: Iterable[Event]) -> Dict[str, int]:
    """Failure events charged to each budget (never raises on a malformed event);
    `max_restarts` appears only when a torchrun agent charged something to it."""
    used = {b: 0 for b in BUDGETS}
    for e in [e for e in non_steps(events) if e.get("kind") == "failure"]:
        if e.get("budget") == TORCHRUN_BUDGET:
            used[TORCHRUN_BUDGET] = used.get(TORCHRUN_BUDGET, 0) + 1
        elif e.get("budget") in used:
            used[e["budget"]] += 1
    return used

