"""The causal model of a run: who did what, when, and whether the record agrees with itself.

Built once from a history's model (`ftharness.history.model.History`) and what the
scenario and the recorded release declare (`Declared`), never from what the run
recorded about its own bounds. It holds

- processes: pid -> (attempt, rank, node), from each `worker_group_started`;
- attempts: their start, their group (world size, ranks), each rank's first step;
- nodes: drained (deadline, from the drain's own record) and dead (when, from the
  action that killed them);
- checkpoints: each report with its step -> the registration -> each restore;
- faults: each injection with its trigger and target; failures: their attempt and agent.

Building it checks that the evidence agrees (`findings`). Every contradiction is a
`Finding` with a blame, decided per rule (the table in docs/verdicts.md):

- `system` (the verdict FAILs): the system under test's own events disagree with each
  other, or with what was done to it: a process training as a rank of a group it is
  not in, a checkpoint registered before it was reported or under another step, a
  restore of a checkpoint never registered, an event of a process after it was killed,
  a failure decided for an attempt that was not running;
- `records` (INCONCLUSIVE, named): damage to ftharness's own records: a clock that
  runs backwards within one process, a fault recorded twice or at another trigger
  than the scenario's, a fault's times that contradict each other, a value of the
  wrong type, a state change missing from the controller's chain.

A finding marked `absence` rests on an event that is not there; when the history
has a gap (an event lost in transit) it is not a FAIL but unknown, like the
properties' violations that rest on absence.

The rules are one module per part of the run, each step a function of the builder that
adds to `findings`: `causal_processes.py` (within one process), `causal_injections.py` (each
fault as the injector recorded it), `causal_attempts.py` (groups, workers, lockstep, restarts),
`causal_checkpoints.py` (registration, restore, reports), `causal_ends.py` (failures, fits,
shutdowns, what fit() returned), `causal_controller.py` (the controllers' and agents' own
account) and `causal_declared.py` (against what was declared and done). This module holds
the model, its findings and the order the steps run in.

Pure: no Ray, no pandas; cheap on a long history (stored steps are read as
columns; the per-step rules run on histories of dicts).
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Tuple

from ftharness.history import (causal_attempts, causal_checkpoints, causal_controller, causal_ends,
                               causal_injections, causal_processes)
from ftharness.history.columns import Events, non_steps
from ftharness.history.kind_facts import NONE as NO_FACTS, KindFacts
from ftharness.history.causal_attempts import Group
from ftharness.history.model import History

from ftharness.history.tolerances import RECORDS, SYSTEM, TOL_CROSS, TOL_SAME, fault_time

#: what other modules import from here (RECORDS, SYSTEM and fault_time kept from before the split)
__all__ = ["CausalModel", "Declared", "Finding", "Group", "build", "odd_field", "type_damage", "well_typed",
           "RECORDS", "SYSTEM", "TOL_CROSS", "TOL_SAME", "fault_time"]
#: worker event kinds: each is emitted by one process of one attempt's group
WORKER_KINDS = ("worker_start", "step", "report", "checkpoint_written", "worker_error", "worker_end",
                "preemption_notice", "dataset_shard")
#: fields whose type a rule relies on: (kind or None for any kind, field) -> allowed types
_N = type(None)
TYPED: Dict[Tuple[Optional[str], str], tuple] = {
    (None, "kind"): (str,),
    (None, "t"): (int, float),
    (None, "seq"): (int,),
    (None, "fit_index"): (int, _N),
    (None, "rank"): (int, _N),
    (None, "world_size"): (int, _N),
    (None, "step"): (int, _N),
    (None, "epoch"): (int, _N),
    (None, "restored_step"): (int, _N),
    (None, "restored_checkpoint"): (str, _N),
    (None, "restored_intact"): (bool, _N),
    (None, "attempt_id"): (str, _N),
    (None, "attempt"): (int, _N),
    (None, "pid"): (int, _N),
    (None, "node_id"): (str, _N),
    (None, "checkpoint"): (str, _N),
    (None, "digest"): (str, _N),
    (None, "metrics"): (dict, _N),
    (None, "return_value"): (dict, _N),
    (None, "workers"): (list, _N),
    (None, "target_hit"): (dict, _N),
    (None, "trigger"): (dict, _N),
    (None, "failure_config"): (dict, _N),
    (None, "workload"): (dict, _N),
    (None, "counts"): (dict, _N),
    (None, "budget"): (str, _N),
    (None, "decision"): (str, _N),
    (None, "error_type"): (str, _N),
    (None, "error_cause"): (str, _N),
    (None, "outcome"): (str, _N),
    (None, "cur"): (str, _N),
    (None, "prev"): (str, _N),
    (None, "num_workers"): (int, list, _N),
    (None, "fault_kind"): (str, _N),
    ("step", "rows"): (list, _N),
    ("step", "step"): (int,),
    ("report", "step"): (int,),
    ("checkpoint_written", "step"): (int,),
    ("step", "rank"): (int,),
    ("report", "rank"): (int,),
    ("worker_start", "rank"): (int,),
    ("worker_end", "rank"): (int,),
    ("checkpoint_registered", "checkpoint"): (str,),
    ("failure", "count"): (int, _N),
    ("failure", "limit"): (int, _N),
    ("fault_injected", "fault"): (int,),
    ("fault_injected", "t_done"): (int, float),
    ("fault_injected", "t_requested"): (int, float),
}
#: findings that say a clock reading of the record is damaged: then no finding about order in time stands
CLOCK_DAMAGE = frozenset({"clock", "fault-times", "odd-value", "derived-field", "fit-order", "collective-order",
                          "fault-notice", "agent-order"})
#: rules that compare clock readings of two events
TIMED = frozenset({"attempt-order", "after-death", "after-shutdown", "zombie-report", "failure-attempt", "fit-order",
                   "fault-trigger", "notice"})


@dataclass(frozen=True)
class Finding:
    """One contradiction in the record."""

    blame: str                 # SYSTEM (FAIL) | RECORDS (INCONCLUSIVE)
    code: str                  # the rule, as docs/verdicts.md names it
    text: str
    absence: bool = False      # rests on an event that is not in the history
    timed: bool = False        # rests on clock readings (unknown when a clock is damaged)

    def line(self) -> str:
        return f"model: {self.code}: {self.text}"


@dataclass(frozen=True)
class Declared:
    """What the judgement may take as given: the scenario and the recorded release, never the run."""

    runtime: str = "ray_train"
    fault_specs: Tuple[dict, ...] = ()
    #: the reference workload (its metrics and return value are ftharness's own)
    reference: bool = True
    #: seconds Ray Train waits for a hung worker's health check (the scenario's profile, else the release's)
    health_check_timeout_s: float = 600.0
    #: the scaling config: a fixed group size, or (min, max) for an elastic one (None: not declared)
    num_workers: Optional[Any] = None
    #: the reference job's checkpoint cadence and last step (None: not declared, or a user's job)
    checkpoint_every: Optional[int] = None
    steps: Optional[int] = None
    #: ((kind, KindFacts), ...): what each fault kind declares the model may take as given (faults/*.py)
    kinds: Tuple[Tuple[str, Any], ...] = ()
    #: per fault index, the target_hit fields its record must hold as the scenario asked (Fault.echoes)
    echoes: Tuple[Dict[str, Any], ...] = ()

    def kind(self, name: Any) -> KindFacts:
        """What the model may take as given about fault kind `name` (nothing for an unknown kind)."""
        return next((f for k, f in self.kinds if k == name), NO_FACTS)

    def holds(self, promise: str) -> bool:
        """Whether the declared job makes `promise` (history/job_shapes.py): a rule that reads one
        runs only where the job promised it."""
        from ftharness.history.job_shapes import PROMISES, REFERENCE, USER

        return (REFERENCE if self.reference else USER) in PROMISES[promise].shapes


@dataclass
class CausalModel:
    """The facts of one run and the contradictions found while building them."""

    h: History
    declared: Declared
    findings: List[Finding] = field(default_factory=list)
    groups: Dict[str, Group] = field(default_factory=dict)
    process: Dict[Any, Tuple[str, Any, Any]] = field(default_factory=dict)   # pid -> (attempt, rank, node)
    attempt_t: Dict[str, float] = field(default_factory=dict)                # attempt id -> its first start
    next_attempt_t: Dict[str, float] = field(default_factory=dict)           # attempt id -> the next one's start
    registered: Dict[str, dict] = field(default_factory=dict)                # checkpoint -> its registration
    drains: Dict[str, Tuple[int, float]] = field(default_factory=dict)       # node -> (deadline_ms, drained at), last
    drain_log: Dict[str, List[Tuple[int, float]]] = field(default_factory=dict)   # node -> every drain of it
    node_deaths: Dict[str, Tuple[float, dict]] = field(default_factory=dict)  # node -> (t, the action)
    pid_deaths: Dict[Any, Tuple[float, dict]] = field(default_factory=dict)   # pid -> (t, the fault)
    injections: Dict[int, dict] = field(default_factory=dict)                # fault index -> fault_injected

    def add(self, blame: str, code: str, text: str, absence: bool = False, timed: bool = False) -> None:
        timed = timed or code in TIMED or " s before " in text or " s after " in text
        absence = absence or code == "sequence"   # an order broken by an event that never arrived
        f = Finding(blame, code, text, absence, timed)
        if f not in self.findings and len(self.findings) < 200:
            self.findings.append(f)

    # -- what the rules of other modules ask
    def fault_time(self, e: dict) -> Optional[float]:
        return fault_time(e)

    def preempted_death(self, node_id: Any) -> Optional[str]:
        """Why the node's death was a preemption Ray must charge to the preemption budget (None: it
        was not): drained for preemption, and killed at or after its own deadline, measured from the
        killing action's own time and the drain's deadline (never from a derived field)."""
        drain, death = self.drains.get(node_id), self.node_deaths.get(node_id)
        if drain is None or death is None:
            return None
        deadline_s = drain[0] / 1000.0
        if death[0] + TOL_SAME < deadline_s:
            return None
        return f"node {str(node_id)[:8]} drained with deadline {deadline_s:.3f}, killed at {death[0]:.3f}"

    def preemption_before(self, node_id: Any, t: float, waited: bool) -> Optional[str]:
        """Why a failure at `t` stands on a preemption of `node_id` (None: it does not): a drain of
        that node before `t` whose deadline passed by `t` (`waited`: the controller waited it out,
        a PreemptionError), or after which the node was killed at or after the deadline and before
        `t`, or killed before the deadline with the failure decided after it: the GCS reads the
        deadline when it detects the death, not when the node died (docs/known-bugs.md: bad-reclaim-charged-to-max-failures, Ray Core's InferDeathInfo),
        and the decision comes after the detection, so a death detected late is preempted."""
        death = self.node_deaths.get(node_id)
        for deadline_ms, at in self.drain_log.get(node_id, []):
            if at > t + TOL_CROSS:
                continue
            deadline = deadline_ms / 1000.0
            if waited and t >= deadline - TOL_CROSS:
                return f"node {str(node_id)[:8]}'s drain deadline {deadline:.3f} had passed"
            if death is not None and deadline - TOL_SAME <= death[0] <= t + TOL_CROSS:
                return f"node {str(node_id)[:8]} died {death[0] - deadline:+.1f} s from its deadline"
            if death is not None and at - TOL_SAME <= death[0] < deadline <= t:
                return (f"node {str(node_id)[:8]} died {deadline - death[0]:.1f} s before its deadline and the "
                        f"failure was decided {t - deadline:.1f} s after it (detected late: preempted)")
        return None

    def drained_before(self, node_id: Any, t: float) -> Optional[int]:
        """The drain deadline (ms) of a node drained at or before `t` (None: not drained then)."""
        drain = self.drains.get(node_id)
        return drain[0] if drain is not None and drain[1] <= t + TOL_CROSS else None

    def system(self) -> List[Finding]:
        return [f for f in self.findings if f.blame == SYSTEM]

    def records(self) -> List[Finding]:
        return [f for f in self.findings if f.blame == RECORDS]


def build(h: History, declared: Optional[Declared] = None) -> CausalModel:
    """The causal model of `h` (kept in `h.memo`: every reader shares one)."""
    declared = declared or Declared()
    kept = h.memo.get("causal")
    if kept is not None and kept[0] == declared:
        return kept[1]
    found = _Builder(h, declared).model
    h.memo["causal"] = (declared, found)
    return found


def odd_field(e: dict) -> Optional[str]:
    """The first field of an event whose value has a type no rule expects there (`TYPED`), or None."""
    kind = e.get("kind")
    for (k, name), types in TYPED.items():
        if (k is None or k == kind) and name in e:
            v = e[name]
            if (isinstance(v, bool) and bool not in types) or not isinstance(v, types) \
                    or (isinstance(v, float) and not math.isfinite(v)):
                return name
    return None


def type_damage(events: Iterable[dict]) -> List[Finding]:
    """Odd values named as damage to the record (INCONCLUSIVE): read over the events as they came,
    before `well_typed` leaves them out. A long history's stored events are typed by their columns."""
    out: List[Finding] = []
    for e in non_steps(events) if isinstance(events, Events) else events:
        name = odd_field(e) if isinstance(e, dict) else "?"
        if name is not None and len(out) < 20:
            v = e.get(name) if isinstance(e, dict) else e
            out.append(Finding(RECORDS, "odd-value", f"{e.get('kind') if isinstance(e, dict) else 'event'} "
                                                     f"seq {e.get('seq') if isinstance(e, dict) else '?'}: {name} is "
                                                     f"{str(v)[:40]!r} ({type(v).__name__}), not a value of that field"))
    return out


def well_typed(events):
    """The events a rule may read without meeting a value of the wrong type: the others are left
    out (`type_damage` names each, so the verdict is INCONCLUSIVE anyway). A long history whose
    events are all well typed is returned as it is (its columns are kept)."""
    if isinstance(events, Events):
        if not any(odd_field(e) is not None for e in events.non_steps()):
            return events
    return [e for e in events if isinstance(e, dict) and odd_field(e) is None]


class _Builder:
    """Builds the model: runs each step (the rules of causal_processes.py, causal_injections.py,
    causal_attempts.py, causal_checkpoints.py, causal_ends.py, causal_controller.py, then
    causal_declared.py) in order over one history, each adding its findings to `self.m`."""

    def __init__(self, h: History, declared: Declared):
        self.h = h
        # the model is kept in h.memo: a strong reference back would make each History a cycle that
        # gc_paused leaves for the oldest generation (a report reads a long history a dozen times)
        self.m = CausalModel(weakref.proxy(h), declared)
        self.small = not hasattr(h.events, "stored") or not getattr(h.events, "stored", 0)
        events = list(non_steps(h.events))
        self.events = events
        for step in (causal_processes.clocks, causal_injections.faults, causal_attempts.groups,
                     causal_attempts.workers, causal_controller.states, causal_checkpoints.checkpoints,
                     causal_checkpoints.reports, causal_ends.failures, causal_ends.fits, causal_ends.ends,
                     causal_injections.triggers, causal_attempts.restarts, causal_ends.results,
                     causal_controller.torchrun, causal_processes.sequence, causal_controller.controller,
                     _Builder._declared):
            try:
                step(self)
            except (TypeError, ValueError, KeyError, AttributeError, IndexError) as e:   # odd values: named damage
                self.m.add(RECORDS, "unreadable", f"the record could not be read as a run "
                                                  f"({type(e).__name__}: {str(e)[:120]})")
        if any(f.code in CLOCK_DAMAGE for f in self.m.findings):   # a damaged clock proves no order in time
            self.m.findings = [Finding(RECORDS, f.code, f"{f.text} (but a clock of the record is damaged)",
                                       f.absence, f.timed) if f.timed and f.blame == SYSTEM else f
                               for f in self.m.findings]

    @property
    def model(self) -> CausalModel:
        return self.m

    def _declared(self) -> None:
        """The rules that hold the record against what was declared and done (causal_declared.py)."""
        from ftharness.history import causal_declared

        causal_declared.check_all(self)

    def _all(self) -> Iterable[dict]:
        """Every event of a short history (all of them are dicts); a long one's non-stored events."""
        return self.h.events if self.small else self.events

    # -- the record's own shape
    def _types(self) -> None:
        for e in self._all():
            kind = e.get("kind")
            for (k, name), types in TYPED.items():
                if (k is None or k == kind) and name in e:
                    v = e[name]
                    if isinstance(v, bool) or not isinstance(v, types) or (isinstance(v, float) and not math.isfinite(v)):
                        self.m.add(RECORDS, "odd-value", f"{kind} seq {e.get('seq')}: {name} is {str(v)[:40]!r} "
                                                         f"({type(v).__name__}), not a value of that field")

    def _worker_events(self) -> Iterable[dict]:
        if self.small:
            return [e for e in self.h.events if e.get("kind") in WORKER_KINDS]
        return [e for e in self.events if e.get("kind") in WORKER_KINDS]
