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

Pure: no Ray, no pandas; cheap on a long history (stored steps are read as
columns; the per-step rules run on histories of dicts).
"""

from __future__ import annotations

import math
import os
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Tuple

from ftharness.history.columns import Events, having, non_steps
from ftharness.history.kind_facts import NONE as NO_FACTS, KindFacts
from ftharness.history.model import History

from ftharness.history.tolerances import (RECORD_LAG_S, RECORDS, SYSTEM, TOL_CROSS, TOL_SAME,  # noqa: F401 - re-exported
                                          fault_time, num as _num)
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
#: what one worker process is, on every event it records: one rank of one attempt, on one node
IDENTITY = ("pid", "rank", "attempt_id", "attempt", "node_id", "world_size", "restart_count", "fit_index")
#: findings that say a clock reading of the record is damaged: then no finding about order in time stands
CLOCK_DAMAGE = frozenset({"clock", "fault-times", "odd-value", "derived-field", "fit-order", "collective-order",
                          "fault-notice", "agent-order"})
#: rules that compare clock readings of two events
TIMED = frozenset({"attempt-order", "after-death", "after-shutdown", "zombie-report", "failure-attempt", "fit-order",
                   "fault-trigger", "notice"})
#: seconds a worker group may be recorded after its ranks started stepping (a busy controller)
TOL_GROUP = 10.0


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
class Group:
    attempt_id: str
    t: float
    world_size: Optional[int]
    workers: Dict[Any, Tuple[Any, Any]]   # rank -> (pid, node_id)


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
        deadline when it detects the death, not when the node died (ray-train-v2-faults.md 3.2),
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


def _emitter_pid(name: Any) -> Optional[int]:
    m = re.match(r"^(?:worker|controller|injector|harness|rendezvous)-(\d+)-", str(name or ""))
    return int(m.group(1)) if m else None


class _Builder:
    def __init__(self, h: History, declared: Declared):
        self.h = h
        self.m = CausalModel(h, declared)
        self.small = not hasattr(h.events, "stored") or not getattr(h.events, "stored", 0)
        events = list(non_steps(h.events))
        self.events = events
        for step in (self._clocks, self._faults, self._groups, self._workers, self._states,
                     self._checkpoints, self._reports, self._failures, self._fits, self._ends, self._triggers,
                     self._restarts, self._results, self._torchrun, self._sequence, self._controller,
                     self._declared):
            try:
                step()
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

    def _clocks(self) -> None:
        """Within one emitter (one process), clock readings do not run backwards."""
        last: Dict[Any, Tuple[float, Any]] = {}
        for e in self._all():
            em, t = e.get("emitter"), _num(e.get("t"))
            if em is None or t is None:
                continue
            prev = last.get(em)
            if prev is not None and t < prev[0] - TOL_SAME:
                self.m.add(RECORDS, "clock", f"{e.get('kind')} seq {e.get('seq')} of {em} is {prev[0] - t:.3f} s "
                                             f"before that process's previous event (seq {prev[1]})")
            if prev is None or t > prev[0]:
                last[em] = (t, e.get("seq"))
        who: Dict[Any, Tuple[Any, ...]] = {}
        for e in self._all():   # a process's events carry its own pid, and a worker is one rank of one attempt
            pid, em = e.get("pid"), _emitter_pid(e.get("emitter"))
            if pid is not None and em is not None and pid != em and e.get("source") in ("worker", "controller"):
                self.m.add(RECORDS, "emitter", f"{e.get('kind')} seq {e.get('seq')} says pid {pid}, "
                                               f"its emitter {e.get('emitter')} is pid {em}")
            if e.get("source") == "worker" and e.get("emitter") is not None:
                ident = tuple(e.get(k) for k in IDENTITY)
                first = who.setdefault(e["emitter"], ident)
                if ident != first:
                    diff = next(k for k, a, b in zip(IDENTITY, first, ident) if a != b)
                    self.m.add(RECORDS, "emitter", f"{e.get('kind')} seq {e.get('seq')} of {e['emitter']} says "
                                                   f"{diff} {str(ident[IDENTITY.index(diff)])[:20]}, that process's "
                                                   f"other events say {str(first[IDENTITY.index(diff)])[:20]}")

    # -- faults: when, what, to whom
    def _faults(self) -> None:
        m, specs = self.m, self.m.declared.fault_specs
        for e in self.events:
            kind = e.get("kind")
            if kind not in ("fault_injected", "fault_action", "fault_healed"):
                continue
            idx, fkind = e.get("fault"), e.get("fault_kind")
            t, done, asked = _num(e.get("t")), _num(e.get("t_done")), _num(e.get("t_requested"))
            where = f"fault {idx} ({fkind}) {kind} seq {e.get('seq')}"
            if done is not None and t is not None:
                if done > t + TOL_SAME:
                    m.add(RECORDS, "fault-times", f"{where}: done at {done:.3f}, after it was written ({t:.3f})")
                elif t - done > RECORD_LAG_S:
                    m.add(RECORDS, "fault-times", f"{where}: done {t - done:.1f} s before it was written")
            if done is not None and asked is not None and asked > done + TOL_SAME:
                m.add(RECORDS, "fault-times", f"{where}: asked for at {asked:.3f}, after it was done ({done:.3f})")
            if kind == "fault_healed":   # (its times only: what a heal undid is causal_declared.fault_heals')
                continue
            if kind == "fault_injected" and type(idx) is int:
                if idx in m.injections:
                    m.add(RECORDS, "fault-twice", f"fault {idx} is recorded as injected twice "
                                                  f"(seq {m.injections[idx].get('seq')} and {e.get('seq')})")
                    continue
                m.injections[idx] = e
                if 0 <= idx < len(specs):
                    spec = specs[idx]
                    if isinstance(spec, dict) and isinstance(fkind, str) and spec.get("kind") not in (None, fkind):
                        m.add(RECORDS, "fault-kind", f"fault {idx} is {spec.get('kind')} in the scenario, "
                                                     f"{fkind[:40]} in the history")
                    want, got = (spec.get("at") if isinstance(spec, dict) else None), e.get("trigger")
                    if isinstance(want, dict) and isinstance(got, dict) and _trigger(want) != _trigger(got):
                        m.add(RECORDS, "fault-trigger", f"fault {idx} fired on trigger {_trigger(got)}, "
                                                        f"the scenario's is {_trigger(want)}")
            hit = e.get("target_hit") if kind == "fault_injected" else e.get("detail")
            hit = hit if isinstance(hit, dict) else {}
            when = m.fault_time(e)
            if when is None:
                continue
            facts = m.declared.kind(fkind)
            if kind == "fault_injected" and facts.drains_node and hit.get("node_id"):
                if _num(hit.get("deadline_ms")) is not None:
                    m.drains[hit["node_id"]] = (int(hit["deadline_ms"]), when)
                    m.drain_log.setdefault(hit["node_id"], []).append((int(hit["deadline_ms"]), when))
            how = str(hit.get("how") or "")
            if kind == "fault_injected" and facts.kills_process and hit.get("pid") is not None \
                    and "SIGKILL" in how.upper():
                m.pid_deaths[hit["pid"]] = (when, e)
            if hit.get("node_id") and "remove_node" in how:
                if facts.removes_node:
                    m.node_deaths.setdefault(hit["node_id"], (when, e))
            if kind == "fault_action" and facts.drains_node and hit.get("node_id") \
                    and "ms_after_deadline" in hit and hit["node_id"] in m.drains:
                derived = _num(hit.get("ms_after_deadline"))
                actual = when * 1000.0 - m.drains[hit["node_id"]][0]
                if derived is not None and abs(derived - actual) > TOL_SAME * 1000:
                    m.add(RECORDS, "derived-field", f"fault {idx}: the kill is recorded {derived:.0f} ms after "
                                                    f"the deadline, its own time says {actual:.0f} ms")

    # -- worker groups and processes
    def _groups(self) -> None:
        m = self.m
        for e in self.events:
            kind, aid, t = e.get("kind"), e.get("attempt_id"), _num(e.get("t"))
            if kind == "attempt_start" and isinstance(aid, str) and t is not None:
                if aid not in m.attempt_t:
                    for prev in m.attempt_t:
                        m.next_attempt_t.setdefault(prev, t)
                    m.attempt_t[aid] = t
            if kind == "worker_group_started" and isinstance(aid, str) and t is not None:
                workers: Dict[Any, Tuple[Any, Any]] = {}
                for w in e.get("workers") or []:
                    if not isinstance(w, dict):
                        continue
                    if w.get("rank") in workers:
                        m.add(SYSTEM, "group", f"attempt {aid[:12]}'s group lists rank {w.get('rank')} twice")
                    workers[w.get("rank")] = (w.get("pid"), w.get("node_id"))
                    if w.get("pid") is not None:
                        m.process[w.get("pid")] = (aid, w.get("rank"), w.get("node_id"))
                if aid in m.groups:
                    m.add(RECORDS, "group", f"attempt {aid[:12]}'s worker group is recorded twice")
                ws = e.get("world_size")
                if isinstance(ws, int) and workers and ws != len(workers):
                    m.add(SYSTEM, "group", f"attempt {aid[:12]}'s group has {len(workers)} workers, world size {ws}")
                m.groups[aid] = Group(aid, t, ws if isinstance(ws, int) else None, workers)
                start = m.attempt_t.get(aid)
                if start is not None and t < start - TOL_CROSS:
                    m.add(SYSTEM, "attempt-order", f"attempt {aid[:12]}'s group started {start - t:.1f} s "
                                                   f"before the attempt did")

    def _workers(self) -> None:
        """Every worker event comes from a process of its attempt's group, as that rank, on that
        node, after the attempt started, and not after the process (or its node) was killed."""
        m = self.m
        seen_first: Dict[Tuple[str, Any], float] = {}
        for e in self._worker_events():
            aid, pid, rank, t = e.get("attempt_id"), e.get("pid"), e.get("rank"), _num(e.get("t"))
            what = f"{e.get('kind')} seq {e.get('seq')} (rank {rank}, pid {pid})"
            group = m.groups.get(aid) if isinstance(aid, str) else None
            if group is not None and group.workers:
                member = group.workers.get(rank)
                if member is None:
                    m.add(SYSTEM, "process", f"{what}: attempt {str(aid)[:12]}'s group has no rank {rank}")
                elif pid is not None and member[0] is not None and member[0] != pid:
                    owner = m.process.get(pid)
                    m.add(SYSTEM, "process", f"{what}: rank {rank} of attempt {str(aid)[:12]} is pid {member[0]}"
                          + (f"; pid {pid} was rank {owner[1]} of attempt {str(owner[0])[:12]}" if owner else
                             "; pid {pid} is in no worker group"))
                elif e.get("node_id") is not None and member[1] is not None and member[1] != e.get("node_id"):
                    m.add(SYSTEM, "process", f"{what}: says node {str(e.get('node_id'))[:8]}, its group placed it "
                                             f"on {str(member[1])[:8]}")
                ws = e.get("world_size")
                if group.world_size is not None and isinstance(ws, int) and ws != group.world_size:
                    m.add(SYSTEM, "process", f"{what}: world size {ws}, its group's is {group.world_size}")
            elif isinstance(aid, str) and aid in m.attempt_t and pid is not None and m.process:
                owner = m.process.get(pid)
                if owner is None:
                    m.add(SYSTEM, "process", f"{what}: pid {pid} is in no worker group", absence=True)
            start = m.attempt_t.get(aid) if isinstance(aid, str) else None
            if start is not None and t is not None and t < start - TOL_CROSS:
                m.add(SYSTEM, "attempt-order", f"{what}: {start - t:.1f} s before its attempt started")
            if t is not None:
                death = m.pid_deaths.get(pid)
                if death is not None and t > death[0] + TOL_CROSS:   # (the injector's clock and the worker's)
                    m.add(SYSTEM, "after-death", f"{what}: {t - death[0]:.1f} s after fault "
                                                 f"{death[1].get('fault')} killed pid {pid}")
                node = e.get("node_id")
                ndeath = m.node_deaths.get(node) if node is not None else None
                if ndeath is not None and t > ndeath[0] + TOL_CROSS:
                    m.add(SYSTEM, "after-death", f"{what}: {t - ndeath[0]:.1f} s after node {str(node)[:8]} was "
                                                 f"removed (fault {ndeath[1].get('fault')})")
            if e.get("kind") == "step" and isinstance(aid, str) and t is not None:
                seen_first.setdefault((aid, rank), t)
                if group is not None and group.t > t + TOL_GROUP:
                    m.add(RECORDS, "attempt-order", f"attempt {aid[:12]}'s group was recorded {group.t - t:.1f} s "
                                                    f"after rank {rank} stepped")
                    group.t = t   # said once
        if self.small:
            self._lockstep()

    def _worker_events(self) -> Iterable[dict]:
        if self.small:
            return [e for e in self.h.events if e.get("kind") in WORKER_KINDS]
        return [e for e in self.events if e.get("kind") in WORKER_KINDS]

    def _lockstep(self) -> None:
        """The ranks of one attempt step together (every step is an all-reduce): the same steps,
        but for the last one of an attempt cut off by a failure; and one process's steps go up by one."""
        m = self.m
        per: Dict[Tuple[str, Any], List[int]] = defaultdict(list)
        emitted: Dict[Any, List[Tuple[Any, Any]]] = defaultdict(list)
        for e in self.h.events:
            if e.get("kind") != "step" or not isinstance(e.get("attempt_id"), str) or type(e.get("step")) is not int:
                continue
            per[(e["attempt_id"], e.get("rank"))].append(e["step"])
            if e.get("emitter") is not None:
                emitted[e["emitter"]].append((e.get("attempt_id"), e.get("rank")))
        for em, who in emitted.items():
            if len(set(who)) > 1:
                m.add(RECORDS, "emitter", f"one process ({em}) recorded steps as {len(set(who))} different "
                                          f"(attempt, rank) pairs")
        by_attempt: Dict[str, Dict[Any, List[int]]] = defaultdict(dict)
        for (aid, rank), steps in per.items():
            by_attempt[aid][rank] = steps
            for a, b in zip(steps, steps[1:]):
                if b != a + 1:
                    m.add(SYSTEM, "step-order", f"rank {rank} of attempt {aid[:12]} recorded step {b} after step {a}",
                          absence=b > a + 1)
                    break
        for aid, ranks in by_attempt.items():
            if len(ranks) < 2:
                continue
            sets = {r: set(s) for r, s in ranks.items()}
            common_top = min(max(s) for s in sets.values())
            for r, s in sets.items():
                for o, so in sets.items():
                    missing = sorted(x for x in so - s if x <= common_top)
                    if missing:
                        m.add(SYSTEM, "lockstep", f"rank {o} of attempt {aid[:12]} did step {missing[0]}, rank {r} "
                                                  f"did not (every step is a collective of all ranks)", absence=True)
                        break
            tops = sorted(max(s) for s in sets.values())
            if tops[-1] - tops[0] > 1:
                m.add(SYSTEM, "lockstep", f"the ranks of attempt {aid[:12]} stopped {tops[-1] - tops[0]} steps apart",
                      absence=True)

    # -- the controller's chain of states
    def _states(self) -> None:
        last: Dict[Any, dict] = {}
        whole: Dict[Any, bool] = {}   # emitter -> its chain starts at INITIALIZING: it records every change
        for e in self.events:   # (each fit() has its own controller process: its own emitter)
            if e.get("kind") != "controller_state" or e.get("source") != "controller":
                continue
            em = e.get("emitter")
            # a recorder inside Ray's controller records every change (a synthetic history need not)
            whole.setdefault(em, em is not None and self.m.declared.runtime != "torchrun")
            prev = last.get(em) if whole[em] else None
            if prev is None and whole[em] and e.get("prev") not in ("INITIALIZING", None):
                self.m.add(RECORDS, "state-chain", f"controller_state seq {e.get('seq')}: the controller's first "
                                                   f"recorded state leaves {e.get('prev')}, not INITIALIZING",
                           absence=True)
            if prev is not None and e.get("prev") != prev.get("cur") and not (
                    e.get("prev") == prev.get("prev") and e.get("cur") == prev.get("cur")):
                self.m.add(RECORDS, "state-chain", f"controller_state seq {e.get('seq')} leaves {e.get('prev')}, "
                                                   f"the last state recorded was {prev.get('cur')} "
                                                   f"(seq {prev.get('seq')})", absence=True)
            last[em] = e

    # -- checkpoints: report -> registration -> restore
    def _checkpoints(self) -> None:
        m = self.m
        reports: Dict[str, List[dict]] = defaultdict(list)
        for att in self.h.ordered():
            for r in having(att.reports, "checkpoint", ("seq", "t", "step", "rank", "attempt_id", "pid", "node_id")):
                if isinstance(r.get("checkpoint"), str):
                    reports[r["checkpoint"]].append(r)
        ray = self.m.declared.runtime != "torchrun"
        last_step: Dict[Any, int] = {}
        for e in self.events:
            if e.get("kind") != "checkpoint_registered":
                continue
            name, t, step = e.get("checkpoint"), _num(e.get("t")), e.get("step")
            where = f"checkpoint_registered seq {e.get('seq')} ({str(name)[:40]})"
            if not isinstance(name, str):
                continue
            if name in m.registered:
                m.add(SYSTEM, "registration", f"{where}: registered twice (first at seq {m.registered[name].get('seq')})")
                continue
            m.registered[name] = e
            path = e.get("path")
            if isinstance(path, str) and path and os.path.basename(path.rstrip("/")) != name:
                m.add(SYSTEM, "registration", f"{where}: its path {path[-60:]} names another checkpoint")
            mine = reports.get(name, [])
            if not mine:
                m.add(SYSTEM, "registration", f"{where}: no rank reported it", absence=True)
                continue
            first = min(mine, key=lambda r: _num(r.get("t")) or 0.0)
            if t is not None and _num(first.get("t")) is not None and first["t"] > t + TOL_CROSS:
                m.add(SYSTEM, "registration", f"{where}: registered {first['t'] - t:.1f} s before rank "
                                              f"{first.get('rank')} reported it")
            if type(step) is int and type(first.get("step")) is int and step != first["step"]:
                m.add(SYSTEM, "registration", f"{where}: registered as step {step}, reported as step {first['step']}")
            if ray and e.get("attempt_id") is not None and first.get("attempt_id") != e.get("attempt_id"):
                m.add(SYSTEM, "registration", f"{where}: registered for attempt {str(e.get('attempt_id'))[:12]}, "
                                              f"reported by attempt {str(first.get('attempt_id'))[:12]}")
            node = first.get("node_id")
            death = m.node_deaths.get(node) if node is not None else None
            if death is not None and _num(first.get("t")) is not None and first["t"] > death[0] + TOL_CROSS:
                m.add(SYSTEM, "zombie-report", f"{where}: reported by rank {first.get('rank')} on node "
                                               f"{str(node)[:8]} {first['t'] - death[0]:.1f} s after that node was "
                                               f"removed, and registered")
            fit = e.get("fit_index")
            if ray and type(step) is int and fit in last_step and step <= last_step[fit]:
                m.add(SYSTEM, "registration", f"{where}: step {step} registered after step {last_step[fit]}")
            if type(step) is int:
                last_step[fit] = max(step, last_step.get(fit, step))
        if ray:   # the controller registers reported checkpoints in order: none skipped before a later one
            regs_of: Dict[Any, List[int]] = defaultdict(list)
            for name, e in m.registered.items():
                if type(e.get("step")) is int:
                    regs_of[e.get("attempt_id")].append(e["step"])
            for name, reps in reports.items():
                r = reps[0]
                later = [x for x in regs_of.get(r.get("attempt_id"), []) if type(r.get("step")) is int and x > r["step"]]
                if name not in m.registered and later:
                    m.add(SYSTEM, "registration", f"checkpoint {name[:40]} (step {r.get('step')}) was reported and "
                                                  f"never registered, while step {min(later)}'s was", absence=True)
        for att in self.h.ordered():
            for w in att.worker_starts:
                name = w.get("restored_checkpoint")
                if not isinstance(name, str):
                    continue
                reg = m.registered.get(name)
                where = f"worker_start seq {w.get('seq')} (rank {w.get('rank')})"
                if reg is None:
                    if att.key[0] == 1 and not any(f.start and f.start.get("resume_of") for f in self.h.fits.values()):
                        m.add(SYSTEM, "restore", f"{where} restored {name[:40]}, which was never registered",
                              absence=True)
                    continue
                rt, wt = _num(reg.get("t")), _num(w.get("t"))
                if rt is not None and wt is not None and rt > wt + TOL_CROSS:
                    m.add(SYSTEM, "restore", f"{where} restored {name[:40]} {rt - wt:.1f} s before it was registered")
                if type(w.get("restored_step")) is int and type(reg.get("step")) is int \
                        and w["restored_step"] != reg["step"]:
                    m.add(SYSTEM, "restore", f"{where} restored {name[:40]} as step {w['restored_step']}, "
                                             f"registered as step {reg['step']}")

    # -- failures: whose, when
    def _failures(self) -> None:
        m = self.m
        for e in self.events:
            if e.get("kind") != "failure":
                continue
            aid, t = e.get("attempt_id"), _num(e.get("t"))
            where = f"failure seq {e.get('seq')} ({e.get('error_type')})"
            if isinstance(aid, str) and m.attempt_t and aid not in m.attempt_t and self.m.declared.runtime != "torchrun":
                m.add(RECORDS, "failure-attempt", f"{where}: for attempt {aid[:12]}, which never started",
                      absence=True)
            start = m.attempt_t.get(aid) if isinstance(aid, str) else None
            if start is not None and t is not None and t < start - TOL_CROSS:
                m.add(SYSTEM, "failure-attempt", f"{where}: decided {start - t:.1f} s before attempt "
                                                 f"{aid[:12]} started")
            nxt = m.next_attempt_t.get(aid) if isinstance(aid, str) else None
            if nxt is not None and t is not None and t > nxt + TOL_CROSS and self.m.declared.runtime != "torchrun":
                m.add(SYSTEM, "failure-attempt", f"{where}: decided for attempt {aid[:12]} {t - nxt:.1f} s after "
                                                 f"the next attempt had started")
            node = e.get("node_id")
            death = m.node_deaths.get(node) if node is not None else None
            if death is not None and t is not None and t > death[0] + TOL_CROSS:
                m.add(SYSTEM, "after-death", f"{where}: decided by the agent on node {node}, {t - death[0]:.1f} s "
                                             f"after that node was removed (fault {death[1].get('fault')})")

    # -- each fit() between its run_start and run_end
    def _fits(self) -> None:
        m = self.m
        for fit in self.h.fits.values():
            start, end = fit.start, fit.end
            ts = _num((start or {}).get("t"))
            te = _num((end or {}).get("t"))
            if ts is not None and te is not None and te < ts - TOL_SAME:
                m.add(RECORDS, "fit-order", f"fit {fit.index} ended {ts - te:.1f} s before it started")
        first = next((f.start for _, f in sorted(self.h.fits.items()) if f.start is not None), None)
        ts = _num((first or {}).get("t"))
        if ts is None:
            return
        early = next((e for e in self.events if e.get("source") in ("controller", "worker")
                      and (_num(e.get("t")) or ts) < ts - TOL_CROSS), None)
        if early is not None:
            m.add(RECORDS, "fit-order", f"{early.get('kind')} seq {early.get('seq')} is "
                                        f"{ts - early['t']:.1f} s before the run started")

    # -- reports: each process reports its own steps, in order, all ranks alike
    def _reports(self) -> None:
        m, d = self.m, self.m.declared
        if not self.small:
            return
        per_proc: Dict[Any, List[dict]] = defaultdict(list)
        steps_of: Dict[Tuple[Any, Any], set] = defaultdict(set)
        written: Dict[Tuple[Any, Any, Any], int] = {}
        names_at: Dict[Tuple[Any, Any], set] = defaultdict(set)
        digests: Dict[str, Tuple[str, int]] = {}
        for e in self.h.events:
            kind = e.get("kind")
            key = (e.get("attempt_id"), e.get("rank"))
            if kind == "step" and type(e.get("step")) is int:
                steps_of[key].add(e["step"])
            elif kind == "checkpoint_written" and type(e.get("step")) is int:
                k = (e.get("attempt_id"), e.get("rank"), e["step"])
                if k in written:
                    m.add(RECORDS, "written", f"checkpoint_written seq {e.get('seq')}: rank {e.get('rank')} wrote "
                                              f"step {e['step']}'s checkpoint twice")
                written[k] = e.get("seq")
            elif kind == "report":
                per_proc[e.get("emitter") or key].append(e)
                where = f"report seq {e.get('seq')} (rank {e.get('rank')}, step {e.get('step')})"
                step, metrics = e.get("step"), e.get("metrics")
                if isinstance(metrics, dict) and "ftharness_step" in metrics and metrics["ftharness_step"] != step:
                    m.add(RECORDS, "report", f"{where}: ftharness recorded it as step {metrics['ftharness_step']}")
                if d.holds("metrics-carry-step") and isinstance(metrics, dict) and "step" in metrics \
                        and metrics["step"] != step:
                    m.add(SYSTEM, "report", f"{where}: the reference job reported metrics of step {metrics['step']}")
                if d.holds("step-before-report") and type(step) is int and steps_of[key] \
                        and step not in steps_of[key]:   # (a user job's step is its report)
                    m.add(SYSTEM, "report", f"{where}: that rank did no step {step} before reporting it", absence=True)
                name = e.get("checkpoint")
                if name is not None:
                    if not isinstance(name, str) or "/" in name or not name:
                        m.add(RECORDS, "report", f"{where}: {str(name)[:40]!r} is no checkpoint folder name")
                        continue
                    names_at[(e.get("attempt_id"), step)].add(name)
                    if d.holds("written-before-reported") and (e.get("attempt_id"), e.get("rank"), step) not in written:
                        m.add(RECORDS, "report", f"{where}: reports checkpoint {name[:40]}, which that rank never "
                                                 f"wrote", absence=True)
                    dg = e.get("digest")
                    if d.holds("new-files-each-report") and isinstance(dg, str) and dg and type(step) is int:
                        if dg in digests and digests[dg][1] != step:
                            m.add(RECORDS, "report", f"{where}: checkpoint {name[:40]} of step {step} has the digest "
                                                     f"of {digests[dg][0][:40]}, of step {digests[dg][1]}")
                        digests.setdefault(dg, (name, step))
        for (aid, step), names in names_at.items():
            if len(names) > 1:
                m.add(SYSTEM, "report", f"the ranks of attempt {str(aid)[:12]} reported {len(names)} checkpoint "
                                        f"folders for step {step} (Ray raises when ranks disagree)")
        by_attempt: Dict[Any, Dict[Any, List[int]]] = defaultdict(dict)
        for proc, reps in per_proc.items():
            steps = [r.get("step") for r in reps if type(r.get("step")) is int]
            for a, b in zip(steps, steps[1:]):
                if b <= a:
                    m.add(SYSTEM, "report", f"rank {reps[0].get('rank')} of attempt "
                                            f"{str(reps[0].get('attempt_id'))[:12]} reported step {b} after step {a}")
                    break
            by_attempt[reps[0].get("attempt_id")][reps[0].get("rank")] = steps
        finished = {a.attempt_id for f in self.h.fits.values() if (f.end or {}).get("outcome") == "succeeded"
                    for a in [max((x for x in self.h.ordered() if x.key[0] == f.index and x.start is not None),
                                  key=lambda x: x.key, default=None)] if a is not None}
        for aid, ranks in by_attempt.items():   # report is a collective: every rank, every time
            if len(ranks) < 2:
                continue
            sets = {r: set(s) for r, s in ranks.items()}
            top = min(max(s, default=0) for s in sets.values())
            if aid in finished:   # a finished attempt's ranks all reported to the end
                top = max(max(s, default=0) for s in sets.values())
            for r, s in sets.items():
                other = next((x for o, so in sets.items() for x in sorted(so - s) if x <= top), None)
                if other is not None:
                    m.add(SYSTEM, "report", f"rank {r} of attempt {str(aid)[:12]} did not report step {other}, "
                                            f"which the other ranks reported (report is a collective)", absence=True)
                    break

    # -- the ends of attempts and fits
    def _ends(self) -> None:
        m = self.m
        ordinal = {}
        for att in self.h.ordered():
            if att.attempt_id is not None:
                ordinal[att.attempt_id] = att.key[1]
        shut: Dict[str, float] = {}
        for e in self.events:
            if e.get("kind") == "worker_group_shutdown" and isinstance(e.get("attempt_id"), str):
                t = _num(e.get("t"))
                if t is not None:
                    shut.setdefault(e["attempt_id"], t)
        ends: Dict[Any, dict] = {}
        for e in self.events:
            if e.get("kind") == "run_end":
                fit = e.get("fit_index")
                if fit in ends:
                    m.add(RECORDS, "fit-order", f"fit {fit} has two run_end events (seq {ends[fit].get('seq')} and "
                                                f"{e.get('seq')})")
                ends[fit] = e
        from ftharness.history.causal_declared import shut_before

        ended = shut_before(self)   # (a group started again under the same id, RESCHEDULING, is up again)
        partitioned = {(e.get("target_hit") or {}).get("node_id") for e in self.events
                       if e.get("kind") == "fault_injected" and self.m.declared.kind(e.get("fault_kind")).cuts_off}
        errors: Dict[Any, int] = defaultdict(int)
        starts: Dict[Tuple[Any, Any], int] = defaultdict(int)
        for e in self._worker_events():
            aid, kind = e.get("attempt_id"), e.get("kind")
            where = f"{kind} seq {e.get('seq')} (rank {e.get('rank')})"
            att = e.get("attempt")
            if self.m.declared.runtime != "torchrun" and isinstance(aid, str) and aid in ordinal \
                    and type(att) is int and att != ordinal[aid] and len(self.h.fits) == 1:
                m.add(RECORDS, "attempt", f"{where}: says attempt {att}, its attempt id is attempt {ordinal[aid]}")
            t = _num(e.get("t"))
            end = ended(aid, t)
            if end is not None and t is not None and t > end + TOL_GROUP and e.get("node_id") not in partitioned:
                m.add(SYSTEM, "after-shutdown", f"{where}: {t - end:.1f} s after its attempt's worker group was "
                                                f"shut down (its node was not cut off)")
            if kind == "worker_error":
                errors[(aid, e.get("rank"))] += 1
                if errors[(aid, e.get("rank"))] == 2:
                    m.add(RECORDS, "worker-error", f"{where}: the second error of one worker (a train function "
                                                   f"raises once)")
            if kind == "worker_start":
                starts[(aid, e.get("rank"))] += 1
                if starts[(aid, e.get("rank"))] == 2:
                    m.add(RECORDS, "worker-start", f"{where}: rank {e.get('rank')} started twice in one attempt")
                if e.get("restored_checkpoint") is None and e.get("restored_intact") is not None:
                    m.add(RECORDS, "worker-start", f"{where}: restored nothing, yet says the restore was "
                                                   f"{'intact' if e['restored_intact'] else 'damaged'}")
        # A group is what the start just before it asked for. An earlier start under the same
        # attempt id that failed before any group started (an elastic restart sized from a node
        # that is gone times out, and Ray retries it with fewer) asked for what it never got.
        asked: Dict[str, Dict[str, Any]] = {}
        for e in self.events:
            aid = e.get("attempt_id")
            if e.get("kind") == "attempt_start" and isinstance(aid, str):
                asked[aid] = e
            elif e.get("kind") == "worker_group_started" and isinstance(aid, str) and aid in asked:
                start = asked.pop(aid)
                g = m.groups.get(aid)
                n = start.get("num_workers")
                if g is not None and g.world_size is not None and type(n) is int and n != g.world_size \
                        and self.m.declared.runtime != "torchrun":
                    m.add(SYSTEM, "group", f"attempt_start seq {start.get('seq')} asks for {n} workers, its group "
                                           f"has {g.world_size}")
        actors: Dict[Any, str] = {}
        for g in m.groups.values():
            pass
        for e in self.events:
            if e.get("kind") != "worker_group_started":
                continue
            for w in e.get("workers") or []:
                a = w.get("actor_id") if isinstance(w, dict) else None
                if a is None:
                    continue
                if a in actors and actors[a] != e.get("attempt_id"):
                    m.add(SYSTEM, "group", f"actor {str(a)[:12]} is a worker of two attempts' groups "
                                           f"(each restart creates new actors)")
                actors[a] = e.get("attempt_id")
        if self.m.declared.holds("returns-last-step"):
            for fit, e in ends.items():
                rv = e.get("return_value")
                step = rv.get("step") if isinstance(rv, dict) else None
                if e.get("outcome") == "succeeded" and type(step) is int and self.small:
                    last = max((x.get("step") for x in self.h.events if x.get("kind") == "step"
                                and x.get("fit_index", fit) == fit and type(x.get("step")) is int), default=None)
                    if last is not None and step != last:
                        m.add(SYSTEM, "return-value", f"fit {fit} returned step {step}, its last step was {last}")

    # -- each fault fired when its trigger did
    def _triggers(self) -> None:
        m = self.m
        if not self.small:
            return
        first_step: Dict[Tuple[int, Any], float] = {}
        for e in self.h.events:
            if e.get("kind") == "step" and type(e.get("step")) is int and _num(e.get("t")) is not None:
                for key in ((e["step"], None), (e["step"], e.get("rank"))):
                    first_step.setdefault(key, e["t"])
        for idx, e in m.injections.items():
            at = e.get("trigger")
            if not isinstance(at, dict) or type(at.get("step")) is not int:
                continue
            fired = first_step.get((at["step"], at.get("rank")))
            asked = _num(e.get("t_requested")) or _num(e.get("t_done"))
            if fired is not None and asked is not None and asked < fired - TOL_CROSS:
                m.add(RECORDS, "fault-trigger", f"fault {idx} was asked for {fired - asked:.1f} s before its trigger "
                                                f"(step {at['step']}) fired")
            if fired is None and e.get("fit_index", 1) == 1 and any(x.get("kind") == "step" for x in self.h.events):
                m.add(RECORDS, "fault-trigger", f"fault {idx} fired on step {at['step']}, which no rank recorded",
                      absence=True)

    # -- every restart was decided, every rank of a finished run ended
    def _restarts(self) -> None:
        m = self.m
        for fit in self.h.fits.values():
            atts = [a for a in self.h.ordered() if a.key[0] == fit.index and a.start is not None]
            decided = [f for f in fit.failures if f.get("decision") == "RETRY"]
            resized = any(e.get("kind") == "controller_state" and e.get("cur") == "RESIZING"
                          and e.get("fit_index", fit.index) == fit.index for e in self.events)
            if len(atts) > 1 and not decided and not resized:
                m.add(RECORDS, "restart", f"fit {fit.index} started {len(atts)} attempts, and no failure decision "
                                          f"retried any", absence=True)
            end = fit.end or {}
            if end.get("outcome") == "succeeded" and atts and self.small:
                last = atts[-1]
                ended = {e.get("rank") for e in last.events if e.get("kind") == "worker_end"}
                started = {e.get("rank") for e in last.worker_starts}
                if started and ended and started - ended:
                    m.add(RECORDS, "worker-end", f"fit {fit.index} succeeded, and rank(s) "
                                                 f"{sorted(started - ended, key=str)} of its last attempt recorded no "
                                                 f"end", absence=True)
            if end.get("outcome") == "succeeded" and end.get("error_type"):
                m.add(RECORDS, "fit-order", f"fit {fit.index} succeeded with error {str(end.get('error_type'))[:40]}")

    # -- what fit() returned agrees with what the ranks did
    def _results(self) -> None:
        m = self.m
        if not self.small:
            return
        for fit in self.h.fits.values():
            end = fit.end or {}
            te = _num(end.get("t"))
            if te is not None:
                late = next((e for e in self.h.events if e.get("fit_index", fit.index) == fit.index
                             and e.get("source") in ("worker", "controller")
                             and (_num(e.get("t")) or te) > te + TOL_CROSS
                             and e.get("node_id") not in self._cut_off()), None)
                if late is not None:
                    m.add(RECORDS, "fit-order", f"{late.get('kind')} seq {late.get('seq')} is {late['t'] - te:.1f} s "
                                                f"after fit {fit.index} returned")
            rv = end.get("return_value")
            ends = [e for e in self.h.events if e.get("kind") == "worker_end" and e.get("rank") == 0
                    and e.get("fit_index", fit.index) == fit.index and e.get("return_value") is not None]
            if isinstance(rv, dict) and ends and isinstance(ends[-1].get("return_value"), dict) \
                    and ends[-1]["return_value"] != rv:
                m.add(SYSTEM, "return-value", f"fit {fit.index} returned {str(rv)[:60]}, rank 0 returned "
                                              f"{str(ends[-1]['return_value'])[:60]}")
            if isinstance(rv, dict) and ends and ends[-1].get("return_value") is not None \
                    and type(rv.get("step")) is int and type(ends[-1].get("step")) is int \
                    and rv["step"] != ends[-1]["step"]:
                m.add(SYSTEM, "return-value", f"fit {fit.index} returned step {rv['step']}, rank 0 ended at "
                                              f"step {ends[-1]['step']}")
            metrics = end.get("metrics")
            regs = [e for e in self.events if e.get("kind") == "checkpoint_registered"
                    and e.get("fit_index", fit.index) == fit.index]
            if isinstance(metrics, dict) and metrics and regs and end.get("outcome") == "succeeded":
                name = regs[-1].get("checkpoint")
                # Ray's Result.metrics are rank 0's report (report_handler: metrics_per_worker[0]);
                # other ranks may report other values (e.g. their own shard's loss)
                rep = next((r for r in self.h.events if r.get("kind") == "report" and r.get("checkpoint") == name
                            and r.get("rank") == 0 and isinstance(r.get("metrics"), dict)), None)
                if rep is not None and rep["metrics"] != metrics:
                    diff = sorted(k for k in set(rep["metrics"]) | set(metrics)
                                  if rep["metrics"].get(k) != metrics.get(k))
                    m.add(SYSTEM if self.m.declared.runtime != "torchrun" else RECORDS, "result",
                          f"fit {fit.index}'s result metrics differ from the report of its last registered "
                          f"checkpoint ({name}) in {', '.join(map(str, diff[:3]))}")
            for a in end.get("agents") or []:
                if not isinstance(a, dict) or a.get("node_id") is None:
                    continue
                killed = a.get("node_id") in m.node_deaths
                if a.get("killed_by_fault") is not None and bool(a["killed_by_fault"]) != killed:
                    m.add(RECORDS, "result", f"run_end says agent {a.get('node_id')} was "
                                             f"{'' if a['killed_by_fault'] else 'not '}killed by a fault; the faults "
                                             f"say {'it was' if killed else 'none killed it'}")

    def _cut_off(self) -> set:
        """Nodes a fault partitioned, paused or degraded: their processes may write late."""
        return {(e.get("target_hit") or {}).get("node_id") for e in self.events if e.get("kind") == "fault_injected"
                and self.m.declared.kind(e.get("fault_kind")).cuts_off}

    # -- TorchElastic: each agent decides for its own node's workers
    def _torchrun(self) -> None:
        m = self.m
        if m.declared.runtime != "torchrun":
            return
        for e in self.events:
            if e.get("source") != "controller" or e.get("agent") is None or e.get("node_id") is None:
                continue
            if str(e.get("node_id")) != f"agent-{e.get('agent')}":
                m.add(RECORDS, "agent", f"{e.get('kind')} seq {e.get('seq')}: agent {e.get('agent')} on node "
                                        f"{e.get('node_id')}")
            if e.get("kind") != "failure" or e.get("budget") != "max_restarts":
                continue
            group = m.groups.get(e.get("attempt_id"))
            failed = e.get("worker_failures")
            if group is None or not isinstance(failed, dict):
                continue
            mine = {str(r) for r, (_, node) in group.workers.items() if node == e.get("node_id")}
            others = sorted(r for r in failed if str(r) not in mine)
            if not failed or others:
                m.add(SYSTEM, "agent", f"failure seq {e.get('seq')}: the agent on {e.get('node_id')} charged a "
                                       f"restart for rank(s) {others or '(none)'}, not workers of its node "
                                       f"(ranks {sorted(mine)})")
        for att in self.h.ordered():   # a torchrun worker registers each checkpoint it reports
            if not self.small:
                break
            names = {r.get("checkpoint") for r in att.reports if isinstance(r.get("checkpoint"), str)}
            regs = {e.get("checkpoint") for e in att.events if e.get("kind") == "checkpoint_registered"}
            cut = att.errors or any(f.get("attempt_id") == att.attempt_id for f in self.h.failures())
            missing = sorted(n for n in names - regs if n not in m.registered)
            if missing and not cut:
                m.add(RECORDS, "registration", f"{self.h.label(att.key)} reported {missing[0][:40]} and never "
                                               f"registered it", absence=True)

    # -- one process does its work in order
    def _sequence(self) -> None:
        """Within one worker process: a step's checkpoint is written, then reported, before the next
        step; a process ends once, at its last step; its end comes after its last step."""
        m = self.m
        if not self.small:
            return
        state: Dict[Any, dict] = {}
        for e in self.h.events:
            if e.get("source") != "worker" or e.get("emitter") is None:
                continue
            kind, em = e.get("kind"), e["emitter"]
            st = state.setdefault(em, {"step": None, "reported": set(), "written": set(), "ended": None})
            where = f"{kind} seq {e.get('seq')} (rank {e.get('rank')})"
            step = e.get("step") if type(e.get("step")) is int else None
            if st["ended"] is not None and kind != "worker_error":
                m.add(RECORDS, "sequence", f"{where}: after that process's worker_end (seq {st['ended']})")
            if kind == "step" and step is not None:
                prev = st["step"]
                if m.declared.holds("written-before-reported") and prev is not None and prev in st["written"] \
                        and prev not in st["reported"]:
                    m.add(SYSTEM, "sequence", f"{where}: stepped on before reporting the checkpoint of step {prev}")
                st["step"] = step
            elif kind == "checkpoint_written" and step is not None:
                if step != st["step"]:
                    m.add(SYSTEM, "sequence", f"{where}: wrote step {step}'s checkpoint at step {st['step']}")
                st["written"].add(step)
            elif kind == "report" and step is not None:
                if step != st["step"] and m.declared.holds("step-before-report"):
                    m.add(SYSTEM, "sequence", f"{where}: reported step {step} at step {st['step']}")
                if e.get("checkpoint") is not None and m.declared.holds("written-before-reported") \
                        and step not in st["written"]:
                    m.add(SYSTEM, "sequence", f"{where}: reported step {step}'s checkpoint before writing it")
                st["reported"].add(step)
            elif kind == "worker_end":
                if st["ended"] is not None:
                    m.add(RECORDS, "sequence", f"{where}: that process ended twice")
                st["ended"] = e.get("seq")
                if step is not None and st["step"] is not None and step != st["step"]:
                    m.add(SYSTEM, "sequence", f"{where}: ended at step {step}, its last step was {st['step']}")

    # -- the controller's own account of attempts
    def _controller(self) -> None:
        m = self.m
        ray = m.declared.runtime != "torchrun"
        current: Dict[Any, Any] = {}
        shut: Dict[Any, int] = defaultdict(int)
        starts: Dict[Any, int] = defaultdict(int)
        for e in self.events:
            kind, aid, em = e.get("kind"), e.get("attempt_id"), e.get("emitter")
            if kind == "run_start":
                current.clear()
            if e.get("source") != "controller" or em is None:
                continue
            if kind == "attempt_start":
                current[em] = aid
                starts[aid] += 1
                if not ray and starts[aid] == 2:
                    m.add(RECORDS, "attempt", f"attempt_start seq {e.get('seq')}: round {aid} started twice")
            elif kind == "worker_group_shutdown":
                shut[aid] += 1
                if shut[aid] == 2:
                    m.add(RECORDS, "attempt", f"worker_group_shutdown seq {e.get('seq')}: attempt "
                                              f"{str(aid)[:12]} shut down twice")
                if ray and em in current and aid != current[em]:   # it shuts down the group of the running attempt
                    m.add(RECORDS, "attempt", f"worker_group_shutdown seq {e.get('seq')}: of attempt "
                                              f"{str(aid)[:12]} while the controller's current attempt was "
                                              f"{str(current[em])[:12]}")
            elif ray and kind in ("controller_state", "failure", "checkpoint_registered", "worker_group_started") \
                    and em in current and aid != current[em]:
                m.add(RECORDS, "attempt", f"{kind} seq {e.get('seq')}: for attempt {str(aid)[:12]} while the "
                                          f"controller's current attempt was {str(current[em])[:12]}")
            if kind == "failure":
                counts, budget, count = e.get("counts"), e.get("budget"), e.get("count")
                if isinstance(counts, dict) and budget in counts and type(count) is int \
                        and counts[budget] != count and budget != "none":
                    m.add(SYSTEM, "failure-count", f"failure seq {e.get('seq')}: count {count}, its counts say "
                                                   f"{budget} {counts[budget]}")
        for fit in self.h.fits.values():   # every attempt followed by another was shut down
            atts = [a for a in self.h.ordered() if a.key[0] == fit.index and a.start is not None]
            for a in atts[:-1]:
                if ray and a.attempt_id is not None and not shut.get(a.attempt_id) and a.groups \
                        and any(x.get("emitter") for x in a.starts):
                    m.add(RECORDS, "attempt", f"{self.h.label(a.key)} was followed by another, and its worker "
                                              f"group was never shut down", absence=True)
            end = fit.end or {}
            last_state = next((e for e in reversed(self.events) if e.get("kind") == "controller_state"
                               and e.get("source") == "controller" and e.get("emitter") is not None
                               and e.get("fit_index", fit.index) == fit.index), None)
            if ray and end.get("outcome") == "succeeded" and last_state is not None \
                    and last_state.get("cur") != "FINISHED":
                m.add(RECORDS, "state-chain", f"fit {fit.index} succeeded, and its controller's last recorded "
                                              f"state is {last_state.get('cur')}", absence=True)
            if end.get("outcome") == "succeeded" and isinstance(end.get("checkpoint"), str):
                regs = [e for e in self.events if e.get("kind") == "checkpoint_registered"
                        and e.get("fit_index", fit.index) == fit.index and isinstance(e.get("checkpoint"), str)]
                if regs and os.path.basename(end["checkpoint"].rstrip("/")) != regs[-1]["checkpoint"]:
                    m.add(SYSTEM, "result", f"fit {fit.index} returned checkpoint "
                                            f"{os.path.basename(end['checkpoint'])[:40]}, its latest registered "
                                            f"was {regs[-1]['checkpoint'][:40]}")
        for g in m.groups.values():   # one actor, one local rank per node, and a torchrun worker's agent is its node
            pass
        for e in self.events:
            if e.get("kind") != "worker_group_started":
                continue
            seen_actor, local = set(), set()
            for w in e.get("workers") or []:
                if not isinstance(w, dict):
                    continue
                a = w.get("actor_id")
                if a is not None:
                    if a in seen_actor:
                        m.add(SYSTEM, "group", f"worker_group_started seq {e.get('seq')} lists actor {str(a)[:12]} twice")
                    seen_actor.add(a)
                if w.get("local_rank") is not None:
                    key = (w.get("node_id"), w.get("local_rank"))
                    if key in local:
                        m.add(SYSTEM, "group", f"worker_group_started seq {e.get('seq')}: two workers are local rank "
                                               f"{w.get('local_rank')} on node {w.get('node_id')}")
                    local.add(key)
                if w.get("agent") is not None and w.get("node_id") is not None \
                        and str(w["node_id"]) != f"agent-{w['agent']}":
                    m.add(RECORDS, "agent", f"worker_group_started seq {e.get('seq')}: rank {w.get('rank')} on "
                                            f"{w.get('node_id')} under agent {w.get('agent')}")


def _trigger(at: dict) -> Tuple:
    """A trigger in one form: (step, rank, time, event, nth, hold)."""
    return (at.get("step"), at.get("rank"), at.get("time_s"), at.get("event"), at.get("nth", 1),
            at.get("hold", True))
