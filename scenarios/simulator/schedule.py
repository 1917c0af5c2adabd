"""One scenario's fault schedule played step by step: what Ray should do and how long it should take.

For comparing the simulator with a recorded run: the outcome, raised error
type and budget counts come from ftharness.scenarios.policy_model itself (the same
function the budget_accounting property judges by); the times come from the
calibration. Faults are a scenario's `faults:` entries (dicts or the fault
specs), fired once each at their trigger, in order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ftharness.faults import REGISTRY, spec_model
from ftharness.faults.base import CERTAIN
from ftharness.scenarios.policy_model import expected_outcome
from ftharness.scenarios.simulator.calibration import Calibration

#: the failure classes the simulator plays (a fault whose kind declares another is not simulated)
SIMULATED_CLASSES = ("worker_group", "preemption")


@dataclass(frozen=True)
class ScheduleResult:
    """Predicted course of one fit(): `counts` per budget, and per failure its
    class, decision, recovery time (None after a RAISE), restored and lost steps."""

    outcome: str
    error_type: Optional[str]
    counts: Dict[str, int]
    classes: List[str]
    decisions: List[str]
    wall_s: float
    recovery_s: List[float]
    restored_steps: List[int]
    lost_steps: List[int]
    last_step: int
    unfired: List[int] = field(default_factory=list)   # fault indexes whose trigger never came


def _as_dict(fault: Any) -> Dict[str, Any]:
    if hasattr(fault, "model_dump"):
        return fault.model_dump(mode="json")
    return dict(fault)


def failure_class(fault: Mapping[str, Any]) -> Optional[str]:
    """policy_model class of a fault's failure, as its kind declares it (`Fault.failure_claim`:
    a preempted node killed before its deadline is a worker-group failure); None for a silent one.
    A fault that may or may not fail, ends fit() itself, or declares nothing is not simulated."""
    from ftharness.faults import failure_of

    kind = fault.get("kind")
    claim = failure_of(fault)
    cls = REGISTRY.get(kind) if isinstance(kind, str) else None
    if cls is None or claim.certainty != CERTAIN or cls.ends_fit or claim.failure not in SIMULATED_CLASSES + (None,):
        simulated = [k for k, c in REGISTRY.items() if not c.ends_fit and c.causes_surely
                     and c.causes in SIMULATED_CLASSES + (None,)]
        raise ValueError(f"simulate_schedule: fault kind {kind!r} is not simulated "
                         f"(supported: {', '.join(simulated)})")
    return claim.failure


def _trigger(fault: Mapping[str, Any]):
    at = fault.get("at") or {}
    if at.get("step") is not None:
        return "step", int(at["step"])
    if at.get("time_s") is not None:
        return "time_s", float(at["time_s"])
    raise ValueError(f"simulate_schedule: trigger {at!r} is not simulated (use at: {{step: N}} or {{time_s: T}})")


def simulate_schedule(failure_config: Optional[Mapping[str, Any]], faults: Sequence[Any],
                      calibration: Calibration, *, steps: int = 30, checkpoint_every: int = 1) -> ScheduleResult:
    """Play `faults` against a job of `steps` steps checkpointing every
    `checkpoint_every` steps. A step fault fires when the lineage first
    completes that step, a time fault at that wall time; a preemption decides
    `notice_s` (+ `kill_offset_s` if negative) later, training on meanwhile."""
    cal = calibration
    pending = [(i, _as_dict(f)) for i, f in enumerate(faults)]
    triggers = {i: _trigger(f) for i, f in pending}
    t, step, registered = 0.0, 0, [(0.0, 0)]     # (time registered, step)
    classes: List[str] = []
    decisions: List[str] = []
    recovery, restored, lost = [], [], []

    def advance(until_t: float = float("inf")) -> None:
        nonlocal t, step
        while step < steps and t + cal.step_s <= until_t:
            t += cal.step_s
            step += 1
            if checkpoint_every and step % checkpoint_every == 0:
                t += cal.checkpoint_s
                registered.append((t + cal.registration_lag_s, step))

    while pending:
        due = [(i, f) for i, f in pending if (triggers[i][0] == "step" and step >= triggers[i][1])
               or (triggers[i][0] == "time_s" and t >= triggers[i][1])]
        if not due:
            if step >= steps:
                break
            advance(t + cal.step_s)
            continue
        i, fault = due[0]
        pending.remove((i, fault))
        cls = failure_class(fault)
        if cls is None:
            continue
        delay = REGISTRY[fault["kind"]].decision_delay_s(spec_model(fault), cal.drain_notice_s)
        if delay:
            advance(t + delay)
        classes.append(cls)
        decision = expected_outcome(failure_config, classes).decisions[-1]
        decisions.append(decision.decision)
        if decision.decision == "RAISE":
            break
        back = max(s for r, s in registered if r <= t)
        restored.append(back)
        lost.append(step - back)
        recovery.append(cal.mean_recovery_s(fault["kind"]))
        t += recovery[-1]
        step = back
        registered[:] = [(r, s) for r, s in registered if r <= t - recovery[-1]]
    final = expected_outcome(failure_config, classes)
    if final.outcome == "succeeded":
        advance()
    return ScheduleResult(final.outcome, final.error_type, dict(final.counts), classes, decisions, t, recovery,
                          restored, lost, step, [i for i, _ in pending])
