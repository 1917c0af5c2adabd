"""What a property knows besides the history: the context `check(events, context)` gets.

`PropertyContext` declares every key a property may read, with its type and what it means;
`scenarios/verdict.py:check_context` builds it, in one place, for a real run (the Chaos Toolkit
probe passes a part of it, synthetic histories and tests their own). tests/test_checks.py
fails when a property reads a key declared nowhere here, and when `check_context` builds one
this does not declare.

A TypedDict, not a dataclass: every key is optional and a check skips what it cannot judge
without it, and whether a key is there at all says something (no `declared`: a synthetic
history judged alone; `workload` present but None: a user job); and the properties' contract,
plugins' included (docs/plugins.md), is a plain mapping, so a context is still the dict that
tests, synthetic histories, benchmarks and a forked checker pass around. The type costs nothing
at run time; the tests hold the properties to it.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple, TypedDict

from ftharness.history.causal import Declared


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


#: every key a context may hold
KEYS = frozenset(PropertyContext.__annotations__)
