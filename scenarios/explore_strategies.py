"""What `ftharness explore` generates: fault schedules over every fault kind a base
scenario's cluster and runtime support, with triggers in the phases where bugs hide,
and the expectation the failure-policy model gives each schedule.

Pure (no Ray): `ftharness.harness.run.explore` runs what this draws. Which kinds
a base supports is asked of the registry (faults.REGISTRY) and the schema: a
kind is supported when a scenario of the base with one fault of that kind
validates (the schema refuses GPU kinds on CPU workers, network kinds without
namespaces, Ray-only kinds under torchrun) and the release accepts it. What each
kind causes, the values drawn for its arguments and where it sits in the shrinking
order are the kind's own declarations (faults/base.py: `failure_claim`,
`explore_args`, `explore_rank`); a kind that declares no failure is left out, with why.

Shrinking: every choice is drawn so that Hypothesis shrinks toward the smallest
scenario: fewer faults first (the count is drawn first), then simpler kinds
(`Fault.explore_rank`), earlier phases and steps, rank 0, each kind's first argument
value. A phase names when a fault fires (`PHASES`); `phase_of` reads it back
from a written trigger.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from hypothesis import assume, strategies as st

from ftharness.errors import ScenarioError
from ftharness.faults import base as faults_base
from ftharness.scenarios.policy_model import expected_outcome
from ftharness.scenarios.schema import Scenario, parse_scenario, release_problem, scenario_data

#: when a fault fires, in shrinking order (the simplest first)
PHASES = (
    "steady",                   # at a step after the second checkpoint (the first is registered by then)
    "before_first_checkpoint",  # at a step before any checkpoint was written
    "checkpoint_write",         # while a worker writes/reports a checkpoint (event checkpoint_written/reported)
    "checkpoint_register",      # when the controller registers a checkpoint (event checkpoint_registered)
    "close_pair",               # at the step of the fault before it, or the next one
    "recovery",                 # when the next attempt starts (event attempt_started, nth 2)
    "restore",                  # when a restarted worker restores a checkpoint (event restored)
    "time",                     # at a wall-clock time after training started
)
#: the events a trigger waits on, the `nth` it may draw, and the times a time trigger may fire at
#: (what `phase_at` draws; a continued exploration replays nothing else: harness/run/explore_state.py)
EVENTS = ("checkpoint_written", "checkpoint_reported", "checkpoint_registered", "attempt_started", "restored")
MAX_NTH = 3
TIME_S = (2.0, 4.0, 8.0, 15.0)
#: phases that only mean something after an earlier fault restarted the run
AFTER_A_FAULT = ("close_pair", "recovery", "restore")

#: seconds an example may run when the base sets no `timeout_s` (the schema's 600 s): a hang is
#: found by the timeout, and every shrink step of a hang costs it; a real exploration spent 10
#: minutes on each of three such steps, while its examples that ended took 36-86 s
EXAMPLE_TIMEOUT_S = 300.0

#: the reference job's own settings explored beside the faults: each is a way real jobs are built
#: whose recovery Ray handles differently (Ray Data keeps no position in the data across a restart).
#: The base's value comes first: what shrinking goes back to. A user's own job is never changed.
WORKLOAD_AXES: Dict[str, Sequence[Any]] = {"data": ("resumable", "ray_data")}

#: how sure a fault is of the failure its kind declares (faults/base.py): CERTAIN, MAYBE, UNKNOWN
CERTAIN, MAYBE, UNKNOWN = faults_base.CERTAIN, faults_base.MAYBE, faults_base.UNKNOWN


def failure_of(fault: Mapping[str, Any]) -> Tuple[Optional[str], str]:
    """(class, certain|maybe|unknown) the policy model charges for one fault: what its kind
    declares (`Fault.failure_claim`, through the registry); unknown for a kind that declares
    nothing, which explore leaves out."""
    from ftharness.faults import failure_of as declared

    return tuple(declared(fault))  # type: ignore[return-value]


def kind_class(kind: str):
    """The Fault class of `kind` (the registry's)."""
    from ftharness.faults import REGISTRY

    return REGISTRY[kind]


def kind_order() -> Tuple[str, ...]:
    """Every registered kind in shrinking order: the simplest first (`Fault.explore_rank`), then
    registry order."""
    from ftharness.faults import FAULT_KINDS

    return tuple(sorted(FAULT_KINDS, key=lambda k: (kind_class(k).explore_rank, FAULT_KINDS.index(k))))


def needs_restart_after(fault: Mapping[str, Any]) -> bool:
    """Whether `fault` lands only through a restart after it (`Fault.lands_after_restart`: a
    corrupted checkpoint, read errors of the checkpoint storage, starved resources)."""
    from ftharness.faults import lands_after_restart

    return lands_after_restart(fault)


def restarts(fault: Mapping[str, Any]) -> bool:
    """Whether `fault` certainly restarts the run (a worker group failure or a preemption)."""
    failure, certainty = failure_of(fault)
    return failure in ("worker_group", "preemption") and certainty == CERTAIN


@dataclass(frozen=True)
class Support:
    """What a base scenario can have: the kinds (in shrinking order), the triggers each takes,
    and the kinds left out with why."""

    kinds: Tuple[str, ...]
    triggers: Dict[str, Tuple[str, ...]]           # kind -> subset of ("step", "event", "time_s")
    left_out: Dict[str, str] = field(default_factory=dict)


def base_data(base: Scenario) -> Dict[str, Any]:
    return scenario_data(base)


def template(kind: str, at: Dict[str, Any], rank: int = 0) -> Dict[str, Any]:
    """One fault of `kind` with its defaults (a target where its spec needs one)."""
    from ftharness.faults import REGISTRY

    spec = REGISTRY[kind].Spec
    f: Dict[str, Any] = {"kind": kind, "at": at}
    if "target" in spec.model_fields and spec.model_fields["target"].is_required():
        f["target"] = {"rank": rank}
    return f


def plain(kind: str, at: Dict[str, Any]) -> Dict[str, Any]:
    """One fault of `kind` with the first value of each drawn argument: what `supported` tries."""
    f = template(kind, at)
    f.update({name: values[0] for name, values in kind_class(kind).explore_args.items() if values[0] is not None})
    return kind_class(kind).explore_draft(f, None)


def _first_error(data: Dict[str, Any], base_dir: Optional[str]) -> Optional[str]:
    try:
        parse_scenario(data, source="explore", base_dir=base_dir)
    except ScenarioError as e:
        return str(e)
    return None


def supported(base: Scenario, ray_version: Optional[str] = None) -> Support:
    """The kinds the registry has that `base`'s cluster, runtime and release accept."""
    from ftharness import releases

    version = ray_version or releases.installed()
    steps = _steps(base)
    kinds, triggers, left = [], {}, {}
    for kind in kind_order():
        if failure_of(plain(kind, {"step": 1}))[1] == UNKNOWN:
            left[kind] = (f"{kind} declares no failure class (Fault.causes): the model cannot expect "
                          f"what a run with it does")
            continue
        ok, why = [], None
        for name, at in (("step", {"step": min(2, steps)}), ("event", {"event": "checkpoint_registered"}),
                         ("time_s", {"time_s": 1.0})):
            data = dict(base_data(base), faults=[plain(kind, at)], expect={"outcome": "succeeded"})
            err = _first_error(data, base.base_dir)
            if err is None:
                sc = parse_scenario(data, base_dir=base.base_dir)
                err = release_problem(sc, version) if version else None
            if err is None:
                ok.append(name)
            why = why or err
        if ok:
            kinds.append(kind)
            triggers[kind] = tuple(ok)
        else:
            left[kind] = why or "refused"
    return Support(tuple(kinds), triggers, left)


def workloads(base: Scenario):
    """A strategy of overrides of the reference job's settings (WORKLOAD_AXES; {}: the base's
    own). Values the base's scenario refuses are left out; a user's job gets only {}."""
    others = _other_workloads(base)
    axes = {}
    for name in dict.fromkeys(n for n, _ in others):
        own = getattr(base.workload, name)
        axes[name] = (own, st.sampled_from([own] + [v for n, v in others if n == name]))
    if not axes:
        return st.just({})
    return st.fixed_dictionaries({n: strat for n, (_, strat) in axes.items()}).map(
        lambda d: {n: v for n, v in d.items() if v != axes[n][0]})


def workload_text(workload: Mapping[str, Any]) -> str:
    """' [data=ray_data]' for an override, '' for the base's own workload."""
    return f" [{', '.join(f'{k}={v}' for k, v in sorted(workload.items()))}]" if workload else ""


def _steps(base: Scenario) -> int:
    w = base.workload
    if w.kind == "reference":
        return w.steps
    return int(w.train_loop_config.get("steps") or w.train_loop_config.get("epochs") or 10)


def phase_at(draw, phase: str, steps: int, every: int, prev: Optional[Dict[str, Any]], kinds_triggers) -> Optional[Dict[str, Any]]:
    """The trigger of a fault in `phase`, or None where the kind cannot fire then."""
    if phase in ("steady", "before_first_checkpoint", "close_pair") and "step" not in kinds_triggers:
        return None
    if phase in ("checkpoint_write", "checkpoint_register", "recovery", "restore") and "event" not in kinds_triggers:
        return None
    if phase == "time" and "time_s" not in kinds_triggers:
        return None
    if phase == "steady":
        lo = min(2 * every + 1, steps)   # the first checkpoint is registered by then: a restore has one
        return {"step": draw(st.integers(lo, max(lo, steps - 1)))}
    if phase == "before_first_checkpoint":
        return {"step": draw(st.integers(1, max(1, every - 1)))}
    if phase == "close_pair":
        if prev is None or prev.get("at", {}).get("step") is None:
            return None
        return {"step": min(steps, prev["at"]["step"] + draw(st.integers(0, 1)))}
    if phase == "checkpoint_write":
        return {"event": draw(st.sampled_from(("checkpoint_written", "checkpoint_reported"))),
                "nth": draw(st.integers(1, MAX_NTH))}
    if phase == "checkpoint_register":
        return {"event": "checkpoint_registered", "nth": draw(st.integers(1, MAX_NTH))}
    if phase == "recovery":
        return {"event": "attempt_started", "nth": 2}
    if phase == "restore":
        return {"event": "restored"}
    return {"time_s": draw(st.sampled_from(TIME_S))}


def _after_a_checkpoint(fault: Mapping[str, Any], every: int) -> bool:
    """Whether `fault` fires once a checkpoint was registered (a restart after it restores one)."""
    at = fault.get("at") or {}
    if at.get("event") in ("checkpoint_registered", "restored", "attempt_started"):
        return True
    return at.get("step") is not None and at["step"] >= 2 * every + 1   # as the steady phase reads it


def phase_of(fault: Mapping[str, Any], prev: Optional[Mapping[str, Any]] = None, every: int = 1) -> str:
    """The phase a written fault fires in (for the coverage table)."""
    at = fault.get("at") or {}
    event = at.get("event")
    if event in ("checkpoint_written", "checkpoint_reported"):
        return "checkpoint_write"
    if event == "checkpoint_registered":
        return "checkpoint_register"
    if event == "attempt_started":
        return "recovery"
    if event == "restored":
        return "restore"
    if at.get("time_s") is not None:
        return "time"
    step = at.get("step")
    prev_step = ((prev or {}).get("at") or {}).get("step")
    if step is not None and prev_step is not None and 0 <= step - prev_step <= 1:
        return "close_pair"
    if step is not None and step < every:
        return "before_first_checkpoint"
    return "steady"


def _fault(draw, kind: str, at: Dict[str, Any], workers: int) -> Dict[str, Any]:
    f = template(kind, at, rank=draw(st.integers(0, max(0, workers - 1))))
    for name, values in kind_class(kind).explore_args.items():
        value = draw(st.sampled_from(values))
        if value is not None:
            f[name] = value
    return kind_class(kind).explore_draft(f, None)


def schedules(base: Scenario, support: Support, max_faults: int = 2):
    """A strategy of fault lists (1 to `max_faults`) valid for `base`."""
    if not support.kinds:
        raise ScenarioError(f"{base.name}: no fault kind can run on this scenario's cluster and runtime")
    steps = _steps(base)
    every = base.workload.checkpoint_every if base.workload.kind == "reference" else 1
    workers = base.workload.min_workers

    restart = next((k for k in support.kinds if failure_of(plain(k, {}))[0] == "worker_group"), None)
    # what the guided schedules lead with: the kinds that are no plain worker failure themselves
    others = tuple(k for k in support.kinds if failure_of(plain(k, {})) != ("worker_group", CERTAIN))

    @st.composite
    def _draw(draw):
        """`guided` (half the schedules): what the model says is worth a run: a kind that is no
        plain worker failure (a preemption, a stall, damaged or failing storage, starved
        resources, a controller death) first, then a failure that restarts the run, so what the
        first did is restored, retried or recovered from (close together, at the restore, at the
        next attempt, later). The count and the flag come first and each fault's choices sit in
        the same places either way, so dropping a fault keeps the others as they were."""
        n = draw(st.integers(1, max_faults))
        guided = draw(st.booleans()) and restart is not None and bool(others)
        out: List[Dict[str, Any]] = []
        for i in range(n):
            if guided and i == 1:
                kind = restart
                draw(st.sampled_from(support.kinds))   # keeps the places of the choices after it
                phase = draw(st.sampled_from(("close_pair", "restore", "recovery", "steady")))
            else:
                kind = draw(st.sampled_from(others if guided and i == 0 else support.kinds))
                phase = draw(st.sampled_from([p for p in PHASES if i > 0 or p not in AFTER_A_FAULT]))
            out.append(_placed(draw, kind, phase, out))
        # a fault that lands only when a later restart reads what it damaged, with none after it,
        # cannot land: the run would be INCONCLUSIVE whatever Ray does (a third of the examples
        # of a real 60-minute exploration were such); Hypothesis draws another
        assume(all(not needs_restart_after(f) or any(restarts(g) for g in out[i + 1:]) for i, f in enumerate(out)))
        return out

    def _placed(draw, kind, phase, out):
        if phase in ("recovery", "restore") and not any(restarts(f) for f in out):
            phase = "steady"   # no earlier fault surely restarts the run: no next attempt, no restore
        elif phase == "restore" and not any(restarts(f) and _after_a_checkpoint(f, every) for f in out):
            phase = "recovery"   # the restart comes before any checkpoint: it restores nothing
        if kind_class(kind).step_only and phase in ("checkpoint_write", "checkpoint_register", "recovery", "time"):
            phase = "steady"   # the worker raises at a step it counts; it never sees those events
        at = phase_at(draw, phase, steps, every, out[-1] if out else None, support.triggers[kind])
        if at is None:
            at = ({"step": min(steps, every + 1)} if "step" in support.triggers[kind]
                  else {"event": "checkpoint_registered"} if "event" in support.triggers[kind]
                  else {"time_s": 2.0})
        f = _fault(draw, kind, at, workers)
        return kind_class(kind).explore_draft(f, any(restarts(g) and _after_a_checkpoint(g, every) for g in out))

    return _draw()


def first_schedules(base: Scenario, support: Support) -> List[Tuple[List[Dict[str, Any]], Dict[str, Any]]]:
    """The coverage pass explore runs before Hypothesis searches: every supported kind once, in
    its simplest schedule, so no kind waits on chance (a real hour runs about 35 examples over
    a dozen kinds, eight phases and two workloads; a random draw left kinds unrun). Each is the
    kind with its first argument values at the first steady step; a kind that shows nothing
    without a restart after it gets a worker failure at the same step. The first kind runs once
    more on each other workload (WORKLOAD_AXES). Pairs of (faults, workload), in order."""
    steps = _steps(base)
    every = base.workload.checkpoint_every if base.workload.kind == "reference" else 1
    step = min(2 * every + 1, steps)
    restart = next((k for k in support.kinds if failure_of(plain(k, {}))[0] == "worker_group"), None)

    def simplest(kind: str) -> Optional[List[Dict[str, Any]]]:
        triggers = support.triggers[kind]
        at = ({"step": step} if "step" in triggers else {"event": "checkpoint_registered", "nth": 1}
              if "event" in triggers else {"time_s": 4.0})
        first = plain(kind, at)
        if not needs_restart_after(first):
            return [first]
        if restart is None or "step" not in support.triggers[restart]:
            return None       # nothing can restart the run after it: it cannot land
        return [first, plain(restart, {"step": at.get("step", step)})]

    out: List[Tuple[List[Dict[str, Any]], Dict[str, Any]]] = []
    for kind in support.kinds:
        faults = simplest(kind)
        if faults is None:
            continue
        out.append((faults, {}))
        if len(out) == 1:
            out.extend((faults, {name: value}) for name, value in _other_workloads(base))
    return out


def _other_workloads(base: Scenario) -> List[Tuple[str, Any]]:
    """(setting, value) of each WORKLOAD_AXES value other than the base's that its scenario accepts."""
    if base.workload.kind != "reference":
        return []
    data = base_data(base)
    return [(name, v) for name, values in WORKLOAD_AXES.items() for v in values
            if v != getattr(base.workload, name)
            and _first_error(dict(data, workload={**data["workload"], name: v}), base.base_dir) is None]


# ------------------------------------------------------------------ expectation
#: what fit() may raise when a failure of this class is the last (policy_model.CLASSES, and the
#: other names the same failure is raised under: a preempted worker that died, a killed controller)
RAISED = {
    "worker_group": ("WorkerGroupError",),
    "preemption": ("PreemptionError", "WorkerGroupError"),
    "preemption_death": ("WorkerGroupError",),
    "controller": ("ControllerError",),
    "controller_fatal": ("ControllerError", "ActorDiedError", "RayActorError"),
}


@dataclass(frozen=True)
class Expected:
    """What the model expects of a schedule: the outcomes it allows (one, unless a fault may or
    may not fail the run), and the faults it never reaches (after a certain RAISE)."""

    outcomes: Tuple[str, ...]
    unreached: Tuple[int, ...]
    edge: float       # how close the schedule sits to a budget edge (0..3), for guidance
    errors: Tuple[str, ...] = ()   # what fit() may raise when it fails


def expectation(failure_config: Mapping[str, Any], faults: Sequence[Mapping[str, Any]],
                ray_version: Optional[str] = None) -> Expected:
    """The outcomes the failure-policy model allows for `faults` in order."""
    classes = [(c, how if i == 0 or how != CERTAIN or separate(faults, i) else MAYBE)
               for i, (c, how) in enumerate(failure_of(f) for f in faults)]
    if any(how == UNKNOWN for _, how in classes):
        return Expected(("succeeded", "failed"), (), 0.0)   # a kind that declares nothing: the model cannot say
    maybes = [i for i, (c, how) in enumerate(classes) if c and how == MAYBE]
    outcomes, unreached, edge, errors = set(), None, 0.0, set()
    for chosen in itertools.product((False, True), repeat=len(maybes)):
        taken = {i for i, t in zip(maybes, chosen) if t}
        order = [(i, c) for i, (c, how) in enumerate(classes) if c and (how == CERTAIN or i in taken)]
        model = expected_outcome(failure_config, [c for _, c in order], ray_version)
        outcomes.add(model.outcome)
        raised_at = order[len(model.decisions) - 1][0] if model.outcome == "failed" else None
        if raised_at is not None:
            errors.update(RAISED.get(model.decisions[-1].failure_class, (model.error_type,)))
        after = set() if raised_at is None else set(range(raised_at + 1, len(faults)))
        unreached = after if unreached is None else unreached & after   # never reached on any course
        for d in model.decisions:
            if d.limit > 0 and d.decision == "RETRY" and d.count == d.limit:
                edge = max(edge, 1.0)                     # the last retry
            if d.decision == "RAISE" and d.limit >= 0 and d.count == d.limit + 1:
                edge = max(edge, 1.5 if d.limit > 0 else 1.0)   # the first over-budget failure
    kinds = {c for c, _ in classes}
    if "preemption" in kinds and "worker_group" in kinds:
        edge += 1.0                                       # a preemption beside a worker failure
    order_outcomes = tuple(o for o in ("succeeded", "failed") if o in outcomes)
    return Expected(order_outcomes, tuple(sorted(unreached or ())), edge, tuple(sorted(errors)))


def separate(faults: Sequence[Mapping[str, Any]], i: int) -> bool:
    """Whether fault `i` surely fails an attempt of its own: it fires once a restart began (the
    next attempt, a restore) or at a step two or more from every other step fault. Faults close
    together, at a time or on a checkpoint event may land in the attempt another fault fails, and
    then Ray sees one failure for both."""
    at = faults[i].get("at") or {}
    if at.get("event") in ("attempt_started", "restored"):
        return True
    step = at.get("step")
    if step is None:
        return False
    others = [(f.get("at") or {}) for j, f in enumerate(faults) if j != i]
    return all(o.get("step") is not None and abs(o["step"] - step) >= 2 for o in others)


def example_scenario(base: Scenario, faults: Sequence[Mapping[str, Any]], expected: Expected,
                     ray_version: Optional[str] = None, workload: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """The scenario one example runs: `base`'s cluster, workload (with the drawn `workload`
    overrides) and budgets with `faults`; its expect judges every property that applies (only
    the base's declared bounds and counters are kept), the outcome the model expects first."""
    data = base_data(base)
    if workload:
        data["workload"] = {**data["workload"], **workload}
    keep = {k: v for k, v in (data.get("expect") or {}).items()
            if k in ("monotonic", "recovery_bound_s", "max_lost_steps")}
    body = {k: v for k, v in data.items() if k not in ("name", "description", "faults", "expect")}
    body["faults"] = [dict(f) for i, f in enumerate(faults) if i not in expected.unreached]
    body["expect"] = {"outcome": expected.outcomes[0], **keep}
    body.setdefault("timeout_s", EXAMPLE_TIMEOUT_S)   # the base's own, where it sets one
    digest = hashlib.sha1(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()[:8]
    return {"name": f"explore-{digest}",
            "description": f"generated by ftharness explore from {base.name}", **body}


def guide(expected: Expected, faults: Sequence[Mapping[str, Any]], covered: Mapping[Tuple[str, str], int],
          every: int = 1) -> float:
    """The score Hypothesis's `target()` maximizes: budget edges the model sees, and
    (kind, phase) pairs not run yet."""
    pairs = {(f["kind"], phase_of(f, faults[i - 1] if i else None, every)) for i, f in enumerate(faults)}
    fresh = sum(1 for p in pairs if not covered.get(p))
    return expected.edge + fresh + (0.5 if len(faults) > 1 else 0.0)


def signature(summary: Mapping[str, Any], workload: Optional[Mapping[str, Any]] = None) -> str:
    """What a failed example found, the same for the same gap: the properties that failed, and an
    outcome the model did not expect (with the error type), and the workload override it needs
    (a gap of Ray Data's is not one of the base job's)."""
    parts = sorted(name for name, p in (summary.get("properties") or {}).items()
                   if isinstance(p, dict) and p.get("status") == "failed")
    if any(str(m).startswith("outcome ") for m in summary.get("mismatches") or []):
        parts.append(f"outcome:{summary.get('outcome')}:{summary.get('error_type') or '-'}")
    return "+".join(parts) + (workload_text(workload or {}) if parts else "")


# ------------------------------------------------------------------ what an example can show
@dataclass(frozen=True)
class Course:
    """What one candidate example can show, known before it runs: the failures it brings
    (`tokens`, each `fault_token`), whether a restart in it restores a checkpoint (None: not
    known), the properties its scenario judges, the outcomes the model allows and how close it
    sits to a budget edge. `by`: "simulator" where the calibrated simulator played the schedule
    (whether a restart restores a checkpoint, how the run ends: `predicted`), "declared" where
    only the kinds' declarations and the model say what it can show (`restores` None)."""

    tokens: frozenset
    restores: Optional[bool]
    properties: frozenset
    outcomes: Tuple[str, ...]
    edge: float
    by: str = "declared"
    predicted: Optional[str] = None
    classes: Mapping[str, Optional[str]] = field(default_factory=dict)   # token -> the class its fault declares


def fault_token(fault: Mapping[str, Any]) -> str:
    """What one fault brings to a run, as explore's budget tells examples apart: the failure class
    its kind surely causes (a crash, a killed node, a hang: one worker-group failure each), or,
    for a kind that causes none of its own or may not cause it (a damaged checkpoint, a resumed
    controller, a transient storage error), the kind with its arguments: what such a fault does
    beyond a failure class is its own."""
    cls, how = failure_of(fault)
    if cls and how == CERTAIN:
        lost = kind_class(fault["kind"]).loses_node and not fault.get("replace")
        return f"class:{cls}" + (" (node lost)" if lost else "")
    own = {k: v for k, v in fault.items() if k not in ("at", "target")}
    return "kind:" + json.dumps(own, sort_keys=True, default=str)


def course(base: Scenario, faults: Sequence[Mapping[str, Any]], expected: Expected,
           workload: Optional[Mapping[str, Any]] = None, ray_version: Optional[str] = None,
           judged: Optional[Any] = None) -> Course:
    """The `Course` of one candidate (pure): its scenario as `example_scenario` writes it (the
    faults the model never reaches left out), the properties that scenario judges (`judged`: a
    scenario -> its property names, verdict.applicable_properties, given by the caller: the verdict
    sits above this module), and, where the calibrated simulator can play the schedule
    (faults at steps or times, classes it simulates) to its end, whether a restart restores a
    checkpoint and how the run ends."""
    data = example_scenario(base, faults, expected, ray_version, workload)
    kept = data["faults"]
    every = base.workload.checkpoint_every if base.workload.kind == "reference" else 1
    props = frozenset(judged(parse_scenario(data, source="explore", base_dir=base.base_dir)) if judged else ())
    restores, by, predicted = None, "declared", None
    try:
        from ftharness.scenarios.simulator import DEFAULTS, simulate_schedule

        sim = simulate_schedule(base.failure_config.model_dump(), kept, DEFAULTS, steps=_steps(base),
                                checkpoint_every=every)
        if not sim.unfired:   # (one it expects never to fire: its step times are the calibration's, not this job's)
            restores, by, predicted = any(s > 0 for s in sim.restored_steps), "simulator", sim.outcome
    except (ValueError, KeyError, TypeError):
        pass   # a kind or a trigger the simulator does not play: the declarations alone
    return Course(frozenset(fault_token(f) for f in kept), restores, props, tuple(expected.outcomes),
                  expected.edge, by, predicted, {fault_token(f): failure_of(f)[0] for f in kept})
