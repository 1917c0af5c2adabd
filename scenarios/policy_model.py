"""What Ray Train's DefaultFailurePolicy decides for a sequence of failures, release by release.

The model mirrors `ray/train/v2/_internal/execution/failure_handling/default.py`
of each supported release (ftharness.releases) so that checks and scenario
expectations need no Ray. Every function takes the `ray_version` the history
was recorded on (None: the newest release's rules). Two rule sets exist:

- 2.58 and later: three budgets, as below;
- 2.51 to 2.57: two budgets, `max_failures` and `controller_failure_limit`.
  There is no preemption class: a worker that died with its node drained for
  preemption is a worker-group failure, charged to `max_failures`, and no
  PreemptionError exists (so `preemption` never appears in such a history).

On 2.58+:

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

TorchElastic (`workload.runtime: torchrun`) has another rule, `torchrun_expectation`:
one budget, `--max-restarts` (`failure_config.max_failures`), which every
node's agent counts for its own worker group. An agent retries the k-th failure
of its group while k <= max_restarts and raises ChildFailedError when k >
max_restarts; preemptions and controller errors are no classes of their own
(every failure counts together). An agent whose rendezvous times out or closes
raises at once, charged to no budget. An agent that only sees another node
leave restarts without counting (a membership change), so agents' counts may
differ; such a restart is recorded charged to `membership` (RETRY, no count).
The run fails at the first RAISE; the other agents may still record failures
while they go down, and those are no violations.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Mapping, Optional

from ftharness import releases
from ftharness.history.model import BUDGETS, LIMIT_FIELD, NOT_RETRYABLE, TORCHRUN_BUDGET

#: failure class -> (budget, error type fit() raises when it is the last failure)
CLASSES: Dict[str, tuple] = {
    "worker_group": ("worker_group", "WorkerGroupError"),
    "preemption": ("preemption", "PreemptionError"),
    "preemption_death": ("preemption", "WorkerGroupError"),
    "controller": ("controller", "ControllerError"),
    "controller_fatal": (NOT_RETRYABLE, "ControllerError"),
}

#: FailureConfig defaults of the newest release (each release's own: releases.RELEASES[...].failure_config)
DEFAULTS = {"max_failures": 0, "max_preemption_failures": -1, "controller_failure_limit": -1}


def rules(ray_version: Optional[str] = None) -> "releases.Release":
    """The release whose policy judges a history recorded on `ray_version`."""
    return releases.for_history(ray_version)


def charged(budget: Optional[str], ray_version: Optional[str] = None) -> Optional[str]:
    """The budget a failure hinted as `budget` (by a fault's landing: a preemption, a
    kill) is charged to on `ray_version`: before 2.58 a preemption is a worker-group failure."""
    if budget == "preemption" and not rules(ray_version).preemption_budget:
        return "worker_group"
    return budget


def failure_class_on(cls: str, ray_version: Optional[str] = None) -> str:
    """`cls` as the release classifies it (preemption classes fold into worker_group before 2.58)."""
    if cls in ("preemption", "preemption_death") and not rules(ray_version).preemption_budget:
        return "worker_group"
    return cls


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


def limits(failure_config: Optional[Mapping], ray_version: Optional[str] = None) -> Dict[str, int]:
    """Budget -> limit for the budgets the release has, with its defaults for missing or None fields."""
    fc = dict(failure_config or {})
    release = rules(ray_version)
    out = {}
    for budget, key in LIMIT_FIELD.items():
        if budget not in release.budgets:
            continue
        value = fc.get(key)
        out[budget] = int(release.failure_config.get(key, DEFAULTS[key])) if value is None else int(value)
    return out


def decide(count: int, limit: int) -> str:
    """RETRY while the budget allows it; the count is incremented before this test."""
    return "RETRY" if limit == -1 or count <= limit else "RAISE"


def expected_outcome(failure_config: Optional[Mapping], failures: Iterable[str],
                     ray_version: Optional[str] = None) -> Expectation:
    """Decisions, budget counts, outcome and raised error type for `failures` on `ray_version`."""
    lim = limits(failure_config, ray_version)
    counts = {b: 0 for b in BUDGETS}
    decisions: List[Decision] = []
    failures = list(failures)
    for i, cls in enumerate(failures):
        if cls not in CLASSES:
            raise ValueError(f"unknown failure class {cls!r}; expected one of {sorted(CLASSES)}")
        budget, error_type = CLASSES[failure_class_on(cls, ray_version)]
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


# --------------------------------------------------------------- TorchElastic
# TORCHRUN_BUDGET (ftharness.history.model): `max_restarts`, counted per agent (its node's worker group)
#: what a torchrun agent raises when its group fails with no restart left
TORCHRUN_RAISED = "ChildFailedError"
#: a torchrun restart that counts against nothing: the agent saw nodes waiting (membership change)
TORCHRUN_MEMBERSHIP = "membership"


def is_torchrun(context: Optional[Mapping] = None, failures: Iterable[Mapping] = ()) -> bool:
    """Whether a history is a torchrun run's: the context says so, or a failure is charged to max_restarts."""
    if context and context.get("runtime"):
        return context["runtime"] == "torchrun"
    return any(f.get("budget") == TORCHRUN_BUDGET for f in failures)


def torchrun_limit(failure_config: Optional[Mapping]) -> int:
    """`--max-restarts`: the scenario's `failure_config.max_failures` (0 when not given)."""
    value = (failure_config or {}).get("max_failures")
    return 0 if value is None else int(value)


def torchrun_expectation(failure_config: Optional[Mapping], failures: Iterable[Mapping]) -> Expectation:
    """Decisions for recorded torchrun failures, in order: each a mapping with
    `agent` (the node whose agent decided) and `budget` (`max_restarts`;
    `membership` for a restart TorchElastic does not count; `none` for an
    agent's own fatal error)."""
    limit = torchrun_limit(failure_config)
    failures = list(failures)
    per_agent: Dict[object, int] = {}
    decisions: List[Decision] = []
    for f in failures:
        if f.get("budget") == TORCHRUN_BUDGET:
            agent = f.get("agent")
            per_agent[agent] = per_agent.get(agent, 0) + 1
            k = per_agent[agent]
            decisions.append(Decision(TORCHRUN_BUDGET, TORCHRUN_BUDGET, "RETRY" if k <= limit else "RAISE",
                                      k, limit, {TORCHRUN_BUDGET: k}))
        elif f.get("budget") == TORCHRUN_MEMBERSHIP:
            decisions.append(Decision(TORCHRUN_MEMBERSHIP, TORCHRUN_MEMBERSHIP, "RETRY", 0, limit, {}))
        else:
            decisions.append(Decision("agent_fatal", NOT_RETRYABLE, "RAISE", 0, 0, {}))
    raised = next((i for i, d in enumerate(decisions) if d.decision == "RAISE"), None)
    total = {TORCHRUN_BUDGET: max(per_agent.values(), default=0)}
    if raised is None:
        return Expectation(decisions, total, "succeeded", None)
    error = (TORCHRUN_RAISED if decisions[raised].budget == TORCHRUN_BUDGET
             else (failures[raised].get("error_type") if raised < len(failures) else None))
    return Expectation(decisions, total, "failed", error)


def fit_expectation(failure_config: Optional[Mapping], failures: List[Mapping],
                    context: Optional[Mapping] = None):
    """(Expectation, the failures it decided, in the same order) for the
    recorded failure events of one fit, by the rule of the runtime that ran it;
    failures of a class the rule does not know are left out."""
    if is_torchrun(context, failures):
        known = [f for f in failures if f.get("budget") in (TORCHRUN_BUDGET, TORCHRUN_MEMBERSHIP, NOT_RETRYABLE)]
        return torchrun_expectation(failure_config, known), known
    version = (context or {}).get("ray_version")
    known = [f for f in failures if failure_class(f.get("budget"), f.get("error_type"))]
    classes = [failure_class(f.get("budget"), f.get("error_type")) for f in known]
    return expected_outcome(failure_config, classes, version), known
