"""What Ray Train 2.60's DefaultFailurePolicy decides for a sequence of failures.

The model mirrors `ray/train/v2/_internal/execution/failure_handling/default.py`
so that checks and scenario expectations need no Ray:

- a non-retryable ControllerError (anything but a worker-group startup failure
  or timeout) is raised at once and charged to no budget;
- every other failure increments its own budget first, then is retried while
  `count <= limit` (limit -1 = infinite) and raised when `count > limit`, so a
  limit L allows L retries;
- the three budgets are independent: `max_failures` (worker group),
  `max_preemption_failures`, `controller_failure_limit`.

Failure classes, with the budget they are charged to and what fit() raises when
that failure exhausts it:

| class | budget | raised |
| --- | --- | --- |
| `worker_group` | worker_group | WorkerGroupError |
| `preemption` | preemption | PreemptionError (the controller waited out a drain) |
| `preemption_death` | preemption | WorkerGroupError (a worker died with `preempted=True`) |
| `controller` | controller | ControllerError (startup failure / timeout) |
| `controller_fatal` | none | ControllerError (any other controller error) |

The policy is asked once per failure; after a RAISE the run is over, so later
failures are never reached. A run with no RAISE is expected to succeed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Mapping, Optional

from harness.history.model import BUDGETS, LIMIT_FIELD, NOT_RETRYABLE

#: failure class -> (budget, error type fit() raises when it is the last failure)
CLASSES: Dict[str, tuple] = {
    "worker_group": ("worker_group", "WorkerGroupError"),
    "preemption": ("preemption", "PreemptionError"),
    "preemption_death": ("preemption", "WorkerGroupError"),
    "controller": ("controller", "ControllerError"),
    "controller_fatal": (NOT_RETRYABLE, "ControllerError"),
}

#: FailureConfig defaults in Ray Train 2.60
DEFAULTS = {"max_failures": 0, "max_preemption_failures": -1, "controller_failure_limit": -1}


@dataclass(frozen=True)
class Decision:
    """The policy's answer to one failure."""

    failure_class: str
    budget: str              # worker_group | preemption | controller | none
    decision: str            # RETRY | RAISE
    count: int               # failures charged to `budget`, this one included (0 for none)
    limit: int               # the budget's limit, -1 = infinite (0 for none)
    counts: Dict[str, int]   # all budgets after this failure


@dataclass(frozen=True)
class Expectation:
    """The expected course of a fit() that meets `failures` in order."""

    decisions: List[Decision]
    counts: Dict[str, int]
    outcome: str                   # succeeded | failed
    error_type: Optional[str]      # what fit() raises, None when it succeeds
    unreached: List[str] = field(default_factory=list)  # classes after the RAISE


def limits(failure_config: Optional[Mapping]) -> Dict[str, int]:
    """Budget -> limit, with Ray's defaults for missing or None fields."""
    fc = dict(failure_config or {})
    out = {}
    for budget, key in LIMIT_FIELD.items():
        value = fc.get(key)
        out[budget] = DEFAULTS[key] if value is None else int(value)
    return out


def decide(count: int, limit: int) -> str:
    """RETRY while the budget allows it; the count is incremented before this test."""
    return "RETRY" if limit == -1 or count <= limit else "RAISE"


def expected_outcome(failure_config: Optional[Mapping], failures: Iterable[str]) -> Expectation:
    """Decisions, budget counts, outcome and raised error type for `failures`."""
    lim = limits(failure_config)
    counts = {b: 0 for b in BUDGETS}
    decisions: List[Decision] = []
    failures = list(failures)
    for i, cls in enumerate(failures):
        if cls not in CLASSES:
            raise ValueError(f"unknown failure class {cls!r}; expected one of {sorted(CLASSES)}")
        budget, error_type = CLASSES[cls]
        if budget == NOT_RETRYABLE:
            decisions.append(Decision(cls, budget, "RAISE", 0, 0, dict(counts)))
        else:
            counts[budget] += 1
            verdict = decide(counts[budget], lim[budget])
            decisions.append(Decision(cls, budget, verdict, counts[budget], lim[budget], dict(counts)))
        if decisions[-1].decision == "RAISE":
            return Expectation(decisions, counts, "failed", error_type, failures[i + 1:])
    return Expectation(decisions, counts, "succeeded", None)


def failure_class(budget: Optional[str], error_type: Optional[str]) -> Optional[str]:
    """The class of a recorded `failure` event (its budget and error type)."""
    if budget == NOT_RETRYABLE:
        return "controller_fatal"
    if budget == "preemption":
        return "preemption" if error_type == "PreemptionError" else "preemption_death"
    if budget in ("worker_group", "controller"):
        return budget
    return None
