"""Soak runs: a scenario trained for a wall-clock duration while faults arrive
from a random process drawn from a seed (Jepsen's generator idea).

Pure: this module draws the plan and builds the scenario; `ftharness.harness.run.soak`
injects the plan on a live cluster.

The fault process runs on training time, not on wall time: after a fault the
clock stops until the run is training again (a new attempt made a new step),
and the next fault comes an exponential gap (mean `mtbf_s`) later. That is
what MTBF means for hardware (time between a repair and the next failure),
and it keeps every fault testable: a fault that arrives while the run is
still restarting hits nothing, and a verdict on it would say nothing.

The plan (gaps and kinds) is fixed by the seed before the run starts; how many
of its faults are reached depends on how long recoveries take, so the summary
names the faults injected and the ones the soak ended before.
"""

from __future__ import annotations

import random
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Mapping, Optional

from ftharness import releases
from ftharness.errors import ScenarioError
from ftharness.faults import REGISTRY
from ftharness.scenarios.schema import Scenario, scenario_data



def soak_spec(kind: str) -> Dict[str, Any]:
    """A fault of `kind` as a soak draws it: a random target, fired when the plan says, with the
    arguments its kind declares for a soak (`Fault.soak_args`)."""
    from ftharness.faults import REGISTRY

    return {"kind": kind, "target": {"random": True}, "at": {"time_s": 0}, **dict(REGISTRY[kind].soak_args or {})}


def _soak_kinds() -> Dict[str, tuple]:
    from ftharness.faults import REGISTRY, failure_of

    return {k: (failure_of(soak_spec(k)).failure, dict(c.soak_args)) for k, c in REGISTRY.items()
            if c.soak_args is not None}


#: fault kinds a soak can draw (those that declare `Fault.soak_args`) -> (the budget Ray charges,
#: as the kind declares it, their spec beyond kind and target)
SOAK_KINDS: Dict[str, tuple] = _soak_kinds()
#: the default mix: each kind's `Fault.soak_weight`, heaviest first
DEFAULT_MIX = {k: w for k, w in sorted(((k, REGISTRY[k].soak_weight) for k in SOAK_KINDS), key=lambda kw: -kw[1])
               if w > 0}
#: no fault is drawn this close to the end: its recovery and evidence need the time
QUIET_TAIL_S = 45.0
#: the longest gap the plan waits for a recovery before it moves on
RECOVERY_WAIT_S = 180.0
#: a base scenario without a step delay or checkpoint retention gets these (hours of steps
#: at full speed would fill the history and the storage, not test more)
SOAK_STEP_DELAY_S = 0.2
SOAK_NUM_TO_KEEP = 3
_UNITS = {"": 1, "s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}


#: the longest soak (and mean time between faults) ftharness plans
MAX_DURATION_S = 7 * 24 * 3600
#: most faults one soak draws: more is a mistake in --mtbf, not a soak
MAX_DRAWS = 10_000


def parse_duration(text: str, name: str) -> float:
    """'90', '90s', '10m', '1h' or '1.5h' -> seconds; bad input names the option."""
    text = str(text)
    m = re.fullmatch(r"\s*(\d{1,12}(?:\.\d{1,6})?)\s*(s|m|min|h|d)?\s*", text) if len(text) <= 32 else None
    if not m or float(m.group(1)) <= 0:
        raise ScenarioError(f"{name}: {text[:40]!r} is not a duration (a positive number with s, m, h or d: "
                            f"90s, 10m, 1h)")
    seconds = float(m.group(1)) * _UNITS[m.group(2) or ""]
    if seconds > MAX_DURATION_S:
        raise ScenarioError(f"{name}: {text.strip()} is longer than a soak may run (at most 7d)")
    return seconds


def parse_mix(text: str) -> Dict[str, int]:
    """'kill_worker:3,preempt_node:2' -> {kind: weight}; unknown kinds are refused."""
    mix: Dict[str, int] = {}
    for part in [p for p in str(text).split(",") if p.strip()]:
        kind, _, weight = part.strip().partition(":")
        if kind not in SOAK_KINDS:
            raise ScenarioError(f"--mix: {kind!r} is not a kind a soak can draw (allowed: {', '.join(SOAK_KINDS)})")
        try:
            w = int(weight or 1)
        except ValueError:
            w = -1
        if w < 0:
            raise ScenarioError(f"--mix: {part.strip()!r}: the weight must be a whole number >= 0")
        mix[kind] = mix.get(kind, 0) + w
    if not mix or not any(mix.values()):
        raise ScenarioError(f"--mix: needs at least one kind with a weight above 0, e.g. "
                            f"{','.join(f'{k}:{w}' for k, w in list(DEFAULT_MIX.items())[:2])}")
    return mix


@dataclass
class Draw:
    """One fault of the plan: it comes `gap_s` of training time after the last recovery."""

    index: int
    gap_s: float
    kind: str
    spec: Dict[str, Any]


@dataclass
class SoakPlan:
    seed: int
    duration_s: float
    mtbf_s: float
    mix: Dict[str, int]
    draws: List[Draw] = field(default_factory=list)

    def budgets(self) -> Dict[str, int]:
        """Failures of each budget the plan can cause at most: limits sized to survive."""
        counts = {"worker_group": 0, "preemption": 0}
        for d in self.draws:
            counts[SOAK_KINDS[d.kind][0]] += 1
        return counts

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


def draw_plan(seed: int, duration_s: float, mtbf_s: float, mix: Optional[Mapping[str, int]] = None) -> SoakPlan:
    """The faults of a soak, reproducible from `seed`: exponential gaps of mean
    `mtbf_s` (training time) and kinds by weight, as many as fit before the
    quiet tail if recoveries took no time (an upper bound on what is reached)."""
    if mtbf_s <= 0 or duration_s <= 0:
        raise ScenarioError("--mtbf and --duration must be positive")
    if duration_s / mtbf_s > MAX_DRAWS:
        raise ScenarioError(f"--mtbf: {mtbf_s:g}s over --duration {duration_s:g}s draws about "
                            f"{duration_s / mtbf_s:.0f} faults, more than a soak plans ({MAX_DRAWS}); raise --mtbf")
    mix = dict(mix or DEFAULT_MIX)
    rng = random.Random(seed)
    kinds = [k for k, w in mix.items() if w > 0]
    weights = [mix[k] for k in kinds]
    plan = SoakPlan(seed, duration_s, mtbf_s, mix)
    t = 0.0
    while True:
        gap = rng.expovariate(1.0 / mtbf_s)
        kind = rng.choices(kinds, weights)[0]
        t += gap
        if t > duration_s - QUIET_TAIL_S:
            return plan
        spec = soak_spec(kind)
        plan.draws.append(Draw(len(plan.draws), round(gap, 3), kind, spec))


def budget_limit(given: Optional[int], need: int, default: Any) -> Optional[int]:
    """The limit a soak gives one FailureConfig budget so that `need` failures charged to it are
    retried. -1 is Ray's "unlimited": a scenario's -1 stays -1 (no number is larger). A number
    the scenario set is raised to `need`. A field it left out is the release's `default`
    (-1 for max_preemption_failures, 0 for max_failures): it stays out (None) while that
    default survives `need` failures, and becomes `need` where it does not."""
    if given is not None:
        return -1 if given == -1 else max(given, need)
    if isinstance(default, int) and (default == -1 or default >= need):
        return None
    return need


def soak_scenario(base: Scenario, plan: SoakPlan, ray_version: Optional[str] = None) -> Scenario:
    """`base` trained for the plan's duration, with budgets sized to survive the plan on Ray
    `ray_version` (default: the installed one; before 2.58 a preemption is charged to
    max_failures); its own faults are left out (the soak injects the plan's as they come).
    Its failure_config holds what `base` set and the budgets the plan needs: a field both
    leave out stays Ray's default (run_start records it as such)."""
    if base.workload.kind != "reference":
        raise ScenarioError("workload.kind: a soak runs the reference workload (it must stop on a deadline)")
    budgets = plan.budgets()
    rel = releases.release(ray_version or releases.installed()) or releases.newest()
    needs = {"max_failures": budgets["worker_group"], "max_preemption_failures": budgets["preemption"]}
    if not rel.preemption_budget:
        needs["max_failures"] += needs.pop("max_preemption_failures")
    data = scenario_data(base)
    data["name"] = f"{base.name}-soak"
    data["description"] = (f"soak of {base.name}: {plan.duration_s:g} s, mtbf {plan.mtbf_s:g} s, "
                           f"mix {','.join(f'{k}:{w}' for k, w in plan.mix.items())}, seed {plan.seed}")
    workload = data.setdefault("workload", {})
    workload.update(duration_s=plan.duration_s, steps=1_000_000)
    if not workload.get("step_delay_s"):
        workload["step_delay_s"] = SOAK_STEP_DELAY_S
    workload.setdefault("num_to_keep", SOAK_NUM_TO_KEEP)
    fc = data["failure_config"] = base.failure_config.given()   # not the model's defaults: Ray's are the release's
    for name, need in needs.items():
        limit = budget_limit(fc.get(name), need, rel.failure_config.get(name))
        if limit is not None:
            fc[name] = limit
    data["faults"] = []
    data["timeout_s"] = plan.duration_s + RECOVERY_WAIT_S + 300
    expect = data.setdefault("expect", {})
    expect["outcome"] = "succeeded"
    return Scenario.model_validate(dict(data, base_dir=base.base_dir))
