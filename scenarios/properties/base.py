"""What every property shares: its result, and the helpers over the history model.

A property is a module of this package with a pure function
`check(events, context) -> CheckResult` over the list `ftharness.history.read_events`
returns (or a `ftharness.history.model.History` built from it), so a history can
be re-judged offline, long after the cluster is gone; nothing here imports ray.
It may also have `applies(facts) -> bool`: whether a scenario expects it when
`expect.properties` is not given (without one, every scenario does).

`context` holds what the runner knows besides the history: a `PropertyContext`
(below: every key, its type and meaning); every key is optional and a check skips
what it cannot judge without it.

A property never passes on missing evidence: what it cannot judge makes it
`not_judged` (see `unknown_or_result`) unless a violation stands anyway, and it
marks the violations that rest on events present (`CheckResult.standing`), which
the verdict keeps as FAIL even when the history has a gap.

Attempts, fits, failures and recoveries are those of `ftharness.history.model`.
The "lineage" is the sequence of steps whose effect survives: when an attempt
restores step r, steps above r done before are thrown away and the restored
attempt's steps replace them.
"""

from __future__ import annotations

import bisect
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple, TypedDict, Union

from ftharness.history.causal import Declared
from ftharness.history.model import History, Key
from ftharness.scenarios.reference_data import WorkloadConfig

MAX_SHOWN = 3                  # violations spelled out in an explanation
PASSED, FAILED, NOT_JUDGED = "passed", "failed", "not_judged"

Events = Union[History, Iterable[dict]]


@dataclass
class CheckResult:
    """A property's verdict. `passed` is None when the history held nothing the
    property could judge (status `not_judged`): absence is not success."""

    name: str
    passed: Optional[bool]
    explanation: str
    findings: List[str] = field(default_factory=list)
    violations: List[str] = field(default_factory=list)
    #: the violations that stand on events present in the history, so that no event a gap lost
    #: could explain them (a failure charged to the wrong budget); the others may rest on an
    #: absence (a step never recorded), and a history with a gap makes them unknown, not FAIL
    standing: List[str] = field(default_factory=list)

    @property
    def status(self) -> str:
        return NOT_JUDGED if self.passed is None else PASSED if self.passed else FAILED


# -- the property context
# A TypedDict, not a dataclass: every key is optional and a check skips what it cannot judge
# without it, and whether a key is there at all says something (no `declared`: a synthetic
# history judged alone; `workload` present but None: a user job); and the properties' contract,
# plugins' included (docs/plugins.md), is a plain mapping, so a context stays the dict that
# tests, synthetic histories, benchmarks and the forked checker pass around. The type costs
# nothing at run time; tests/test_properties_context.py holds the properties to it (a key read
# or built that is not declared here fails it). `scenarios/verdict.py:check_context` builds it.


class LandedFault(TypedDict):
    """A fault that landed, by its failure."""

    index: int                    # the fault's place in the run's fault list
    kind: str                     # its fault kind
    failure_seq: Optional[int]    # seq of the failure event it caused (None: it caused none)


class PropertyContext(TypedDict, total=False):
    """Every key a property may read besides the history; each is optional."""

    #: which failure policy decided: `ray_train` (Ray Train's FailureConfig) or `torchrun` (TorchElastic's max_restarts)
    runtime: str
    #: the Ray release the run recorded (run_start.ray_version); None: recorded before ftharness wrote it (2.60)
    ray_version: Optional[str]
    #: the scenario's failure_config (max_failures, max_preemption_failures, controller_failure_limit, ...);
    #: each fit is judged by the one its run_start recorded, a difference leaves budget_accounting not judged
    failure_config: Dict[str, Any]
    #: how the last fit() ended (`succeeded`, `failed`, ...), when it has no run_end in the history
    outcome: Optional[str]
    #: the error type the last fit() raised, when it has no run_end in the history
    error_type: Optional[str]
    #: the reference workload's recorded config (WorkloadConfig fields); None: a user job, or unknown
    workload: Optional[Dict[str, Any]]
    #: why the reference workload's config is unknown; what needs it is then not judged
    workload_missing: Optional[str]
    #: how the job reads its data: `resumable` or `ray_data` (None: a user job without datasets)
    data: Optional[str]
    #: the accumulators a fault-free run ends with (None: nothing exact to compare)
    expected_final: Optional[List[float]]
    #: the accumulators the run ended with (None: not returned)
    final: Optional[List[float]]
    #: `expect.recovery_bound_s` (None: `recovers.DEFAULT_RECOVERY_BOUND_S` + the health-check wait)
    recovery_bound_s: Optional[float]
    #: `expect.max_lost_steps`, the most steps one restart may redo (None: two checkpoint intervals)
    max_lost_steps: Optional[int]
    #: `expect.monotonic`: the metric names that must never go down
    monotonic: List[str]
    #: the faults injected, in order: the history's fault_injected events (synthetic: {kind, budget, fault})
    injected: List[Dict[str, Any]]
    #: failure seq -> (the budget it must be charged to, the fault kind, the fault index), from the landings
    expected_budgets: Dict[int, Tuple[Optional[str], str, int]]
    #: the faults that landed
    landed: List[LandedFault]
    #: what the causal model takes as given: the scenario's faults, runtime and health-check timeout
    declared: Declared
    #: the health-check timeout a recovery may wait for (0.0: no fault of the scenario waits for one)
    health_check_s: Optional[float]
    #: the checkpoint cadence the scenario declares (None: a user job; a bound never comes from the run it judges)
    checkpoint_every: Optional[int]


#: every key a property context may hold
CONTEXT_KEYS = frozenset(PropertyContext.__annotations__)


Check = Callable[[Events, PropertyContext], CheckResult]


@dataclass(frozen=True)
class Facts:
    """What a scenario says before it runs, for the properties it expects by default."""

    reference_workload: bool   # the reference workload (its rows are known)
    restarts: bool             # a fault restarts the job: a worker group, or fit() itself
    retried: bool              # a fault is charged to a budget, so Ray may retry it
    expect_outcome: str        # `expect.outcome`
    monotonic: bool = False    # `expect.monotonic` names counters
    row_ids: bool = False      # a user job whose datasets carry row ids (`workload.row_id`)


def always(facts: Facts) -> bool:
    """Every scenario expects the property by default."""
    return True


def not_judged(name: str, why: str) -> CheckResult:
    """Property `name` not judged: the history holds nothing to judge it by (`why`); never a pass."""
    return CheckResult(name, None, f"not judged: {why}")


def result(name: str, violations: List[str], findings: List[str], summary: str,
           standing: Iterable[str] = ()) -> CheckResult:
    """Passed with `summary`, or failed with the first violations spelled out;
    `standing`: those of `violations` that no lost event could explain."""
    if not violations:
        return CheckResult(name, True, summary, findings)
    more = f" (+{len(violations) - MAX_SHOWN} more)" if len(violations) > MAX_SHOWN else ""
    standing = [v for v in violations if v in set(standing)]
    return CheckResult(name, False, "; ".join(violations[:MAX_SHOWN]) + more, violations + findings,
                       list(violations), standing)


def unknown_or_result(name: str, violations: List[str], unknown: List[str], findings: List[str], summary: str,
                      standing: Iterable[str] = ()) -> CheckResult:
    """`result`, except that with no violation but evidence missing (`unknown`: what could not
    be judged) the property is not judged: absence is never a pass."""
    if unknown and not violations:
        more = f" (+{len(unknown) - MAX_SHOWN} more)" if len(unknown) > MAX_SHOWN else ""
        return CheckResult(name, None, "not judged: " + "; ".join(unknown[:MAX_SHOWN]) + more, unknown + findings)
    return result(name, violations, unknown + findings, summary, standing)


def recorded_failure_config(h: History, fit_index: Optional[int], context: PropertyContext) -> Tuple[dict, List[str]]:
    """(the failure_config a fit() ran with, mismatches with the scenario's): the one its
    run_start recorded (the history is the fact), else the context's (an old or synthetic
    history without one). A scenario whose limits differ from the recorded ones did not run
    as it says: the mismatches name each field."""
    declared = context.get("failure_config")
    fit = h.fits.get(fit_index) if fit_index is not None else None
    start = (fit.start if fit is not None else None) or next(
        (f.start for _, f in sorted(h.fits.items()) if f.start is not None), None) or {}
    recorded = start.get("failure_config")
    if not isinstance(recorded, dict):
        return dict(declared or {}), []
    problems = []
    if isinstance(declared, dict):
        # every setting both hold (the budgets, and a release's preemption_grace_s or
        # relax_collectives_on_preemption): a value the scenario did not ask for was not its run's
        for key in sorted(set(declared) & set(recorded), key=str):
            if declared[key] is not None and declared[key] != recorded[key]:
                problems.append(f"the history's run_start recorded failure_config.{key} {recorded[key]}, "
                                f"the scenario says {declared[key]}: the run was not configured as the scenario "
                                f"asks (judged by the recorded one)")
    return dict(recorded), problems


def lineage(h: History) -> Tuple[Dict[int, Optional[Key]], List[str]]:
    """Kept lineage step -> the attempt whose copy of it survives (None: before
    this history, for a run resumed from elsewhere), and restores of steps the
    lineage never reached."""
    if "lineage" not in h.memo:   # two properties read it
        h.memo["lineage"] = _lineage(h)
    kept, problems = h.memo["lineage"]
    return dict(kept), list(problems)


#: the most steps a restore may put before the history's own (a resumed run's earlier steps)
MAX_FILL = 10_000_000


def _lineage(h: History) -> Tuple[Dict[int, Optional[Key]], List[str]]:
    kept: Dict[int, Optional[Key]] = {}
    problems: List[str] = []
    started = False
    order: List[int] = []   # the keys of `kept`, ascending: its max is the last, steps above r a tail
    for att in h.ordered():
        r = att.restored_step()
        if r is None:
            continue
        top = order[-1] if order else 0
        if r > top and started:
            problems.append(f"{h.label(att.key)} restored step {r} but the lineage only reached "
                            f"step {top}: steps {top + 1}-{r} were never run")
            if r - top > MAX_FILL:   # never run, so nothing to keep: not millions of empty slots
                continue
        elif r - top > MAX_FILL:     # a restore from before this history, of more steps than any run
            problems.append(f"{h.label(att.key)} restored step {r}, more than {MAX_FILL:,} steps beyond "
                            f"step {top}: not a step this history can hold")
            continue
        for s in range(top + 1, r + 1):
            kept[s] = None
            order.append(s)
        while order and order[-1] > r:
            del kept[order.pop()]
        for s in _steps_above(h, att, r):
            kept[s] = att.key
            order.append(s)
        started = True
    return kept, problems


def _steps_above(h: History, att, r) -> List:
    """The distinct steps of `att` above `r`, ascending."""
    steps = h.column(att, "step")
    if type(r) is int and h.all_int(att, "step"):   # then `or 0` changes nothing: a sort of the distinct ones
        distinct = sorted(set(steps))
        return distinct[bisect.bisect_right(distinct, r):]
    return sorted({e.get("step") for e in att.steps if (e.get("step") or 0) > r})


def segments(h: History, kept: Dict[int, Optional[Key]]) -> str:
    """'attempt 1: 1-4, attempt 2: 5-12' for a lineage."""
    if "lineage" in h.memo and h.memo["lineage"][0] == kept:   # the lineage several properties show
        if "segments" not in h.memo:
            h.memo["segments"] = _segments(h, kept)
        return h.memo["segments"]
    return _segments(h, kept)


def _segments(h: History, kept: Dict[int, Optional[Key]]) -> str:
    parts: List[List] = []
    for s in sorted(kept):
        if parts and parts[-1][0] == kept[s] and parts[-1][2] == s - 1:
            parts[-1][2] = s
        else:
            parts.append([kept[s], s, s])
    return ", ".join(f"{h.label(k) if k else 'earlier run'}: {a}-{b}" for k, a, b in parts)


def controller_killed(h: History, context: "PropertyContext") -> Optional[bool]:
    """Whether a fault whose kind ends fit() itself (`Fault.ends_fit`: a killed controller) was
    injected into the run; None when nothing says (or a kind nobody registered may have). A fit()
    that raised ActorDiedError with no failure decision then lost its controller to the fault:
    Ray's budgets retry no controller death (a second fit() with the same name resumes it)."""
    from ftharness.faults import ends_fit
    from ftharness.history.columns import non_steps

    kinds = [f.get("fault_kind") if f.get("kind") == "fault_injected" else f.get("kind")   # an event, or synthetic's
             for f in context.get("injected") or []]
    kinds += [e.get("fault_kind") for e in non_steps(h.events) if e.get("kind") == "fault_injected"]
    if not kinds and context.get("injected") is None:
        return None
    ends = [ends_fit(k) for k in kinds if isinstance(k, str)]
    return True if any(ends) else (None if None in ends else False)


def failure_text(h: History, f: dict) -> str:
    """'failure seq 57 (attempt 1, WorkerGroupError)' for a failure of `h.failures()`."""
    return f"failure seq {f.get('seq')} ({h.label(f.get('_key'))}, {f.get('error_type')})"


def workload_config(context: PropertyContext) -> Optional[WorkloadConfig]:
    """The reference workload's config from `context["workload"]`, or None."""
    wl = context.get("workload")
    if not wl:
        return None
    names = {f.name for f in dataclasses.fields(WorkloadConfig)}
    return WorkloadConfig(**{k: v for k, v in wl.items() if k in names})


def known_kinds():
    """The causal model's declarations for a history judged without a scenario (a synthetic one, a
    property run alone): what every registered fault kind declares of itself, nothing else."""
    from ftharness.faults import kind_facts
    from ftharness.history.causal import Declared

    return Declared(kinds=kind_facts())
