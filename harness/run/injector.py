"""The fault injector: fires each scenario fault when its trigger says, on the
driver's main thread, and records what it did.

Triggers on steps and history events are detected inside the history actor (see
ftharness.history.triggers), which also holds the emitting worker at a gate until the
fault is done; time triggers count from the run's start. Follow-up actions (a
preempted node dying at its deadline, a replacement node joining, a heal after
`duration_s`) go on a small timeline run by the same loop. Everything runs on
the main thread because adding and removing embedded nodes must.

The kinds that `runs_in` the worker (crash_worker, cuda_error, collective_hang) are the
exception: they act inside the train function, so the worker does them itself
(ftharness.harness.job.instrument) from the plan `crash_plans` gives. Nothing here names
a kind: what each needs is declared on its class (faults/base.py) and read from the registry.

Each `fault_injected` records what its landing is judged by (faults/base.py):
the victim's attempt id and pid (or node and ranks) in `target_hit`, and
`window_s`, the kind's window for the failure it causes (the health-check
timeout included for a hang).

The landing hold: by default a train function that returns waits (in the
history actor) until every fault has resolved, so a run cannot end before its
faults took effect. `resolve_hold` releases it once each fault has landed, was
skipped, or can no longer land: its trigger can no longer fire (nothing has
happened for QUIET_S while the workers wait), or its follow-ups are done and
`settle_s` passed without the evidence its module asks for.
"""

from __future__ import annotations

import heapq
import itertools
import random
import time
import traceback
from typing import Any, Callable, Dict, List, Optional

import ray

from ftharness.faults import IN_WORKER, REGISTRY, make_fault, spec_model
from ftharness.faults.base import PENDING, FaultContext, FaultSpecBase, FaultView, judge_landing, spec_record
from ftharness.errors import FaultSkipped
from ftharness.harness.cluster import ray_private as rp
from ftharness.harness.cluster.agents import Agents
from ftharness.history.records import read_events
from ftharness.harness.cluster.history_service import Emitter

QUIET_S = 2.0          # no event for this long while workers are held: triggers can no longer fire
HOLD_CHECK_S = 0.5     # how often the hold is re-judged


def crash_plans(scenario, seed: int = 0) -> List[Dict[str, Any]]:
    """What each worker needs to know to do its in-worker faults itself (the kinds that
    `runs_in` the worker: crash_worker, and faults/gpu.py's cuda_error and collective_hang)."""
    rng = random.Random(seed)
    plans = []
    for i, f in enumerate(scenario.faults):
        if f.kind not in IN_WORKER:
            continue
        rank = f.target.rank if f.target.rank is not None else rng.randrange(scenario.workload.min_workers)
        plan = {"fault": i, "kind": f.kind, "where": getattr(f, "where", "before_step"), "rank": rank,
                "step": f.at.step, "nth": f.at.nth, "target_asked": f.target.model_dump(exclude_none=True)}
        plan.update({k: getattr(f, k) for k in ("how", "duration_s") if getattr(f, k, None) is not None})
        plan.update(REGISTRY[f.kind].worker_plan(f, scenario))
        plans.append(plan)
    return plans



class Injector:
    def __init__(self, scenario, cluster, history, run_name: str, storage_dir: str, history_path: str,
                 seed: int = 0, health_check_timeout_s: float = 600.0, storage_fs=None,
                 agents: Optional[Agents] = None):
        self.cluster = cluster
        self.history = history
        self.storage_dir = storage_dir
        self.storage_fs = storage_fs    # the pyarrow filesystem storage_dir is on (None: local disk)
        self.history_path = history_path
        self.emitter = self.make_emitter(history, run_name)
        #: the node agents: the cluster's (kept for its next run) or this run's own (ended at finish)
        self.agents = agents if agents is not None else Agents()
        self._own_agents = agents is None
        self.rng = random.Random(seed)
        #: the run's faults, spec models (a fault fired by hand is added here)
        self.models: List[FaultSpecBase] = list(scenario.faults)
        self.faults = {i: make_fault(i, spec) for i, spec in enumerate(self.models)
                       if spec.kind not in IN_WORKER}
        self.time_triggers = sorted((spec.at.time_s, i) for i, spec in enumerate(self.models)
                                    if i in self.faults and spec.at.time_s is not None)
        self._timeline: List[tuple] = []
        self._ids = itertools.count()
        self._active: List[Any] = []
        self._members: List[Dict[str, Any]] = []
        self.t0: Optional[float] = None
        #: when training started (the first step recorded): what `at: {time_s}` counts from, as
        #: the schema says; counted from fit() instead, a time trigger of a few seconds fired
        #: before any worker group ran (a third of a real exploration's time faults were skipped)
        self.t_train: Optional[float] = None
        self.resume_requested = False
        self.health_check_timeout_s = health_check_timeout_s
        self.hold_released = False
        self._hold_checked = 0.0
        self._waited: List[str] = []  # faults the hold waited for ("fault 0", ...)

    @property
    def specs(self) -> List[Dict[str, Any]]:
        """The run's faults as the history records them (`run_end.fault_specs`, the summary)."""
        return [spec_record(m) for m in self.models]

    # -------------------------------------------------------------- lifecycle
    def arm(self) -> None:
        triggered = [spec_record(s) if i in self.faults and s.at.time_s is None else {"at": {"time_s": 0}}
                     for i, s in enumerate(self.models)]
        self._send("arm", triggered)
        if self.faults:
            self._start_agents()

    def _start_agents(self) -> None:
        """An agent on every live node now, so a trigger costs no actor start."""
        try:
            live = [n.node_id for n in self.cluster.nodes() if n.alive]
            self.agents.keep_only(live)
            self.agents.start(live)
        except RuntimeError:  # a node that cannot host one gets it on demand, or is gone
            pass

    def start(self) -> None:
        self.t0 = self.t0 or time.time()

    def tick(self) -> Optional[Dict[str, Any]]:
        """One pass: fired triggers, due time triggers, due timeline actions; returns the
        run's progress as the history book answered it, or None when there was nothing to
        ask: a run without a fault the injector fires (fault-free, or only in-worker
        faults) has no trigger to poll, and its training is not slowed by polls."""
        if not self.faults and not self._timeline:
            return None
        polled = self._call("take_pending")
        self._members = polled["members"]
        # Faults fired by one event all come in this batch, and the worker waits at the gate of the
        # first: release the gates only once every one of them is done, so "both at step 5" means
        # the worker goes on after both (it could otherwise commit a newer checkpoint before a kill).
        gates = [p["fault"] for p in polled["pending"] if p["gated"]]
        try:
            for p in polled["pending"]:
                self._fire(p["fault"], p["t_requested"], p.get("event") or {}, gated=False)
        finally:
            for fault in gates:
                self._release(fault)
        now = time.time()
        if self.t_train is None and int((polled.get("progress") or {}).get("step") or 0) > 0:
            self.t_train = now
        while self.time_triggers and self.t_train is not None and self.t_train + self.time_triggers[0][0] <= now:
            at, i = self.time_triggers.pop(0)
            self._fire(i, self.t_train + at, {}, gated=False)
        while self._timeline and self._timeline[0][0] <= time.time():
            due, _, fn, label, kind, fault = heapq.heappop(self._timeline)
            self._run_action(due, fn, label, kind, fault)
        return polled.get("progress")

    def resolve_hold(self, progress: Dict[str, Any]) -> None:
        """Release the workers held at the end of training once no fault can still land."""
        now = time.time()
        if self.hold_released or not progress.get("held") or now - self._hold_checked < HOLD_CHECK_S:
            return
        self._hold_checked = now
        waiting = self.unresolved(read_events(self.history_path), now - (progress.get("last_t") or now))
        if waiting:
            self._waited = sorted(set(self._waited) | {w.split(":")[0] for w in waiting})
            return
        self.hold_released = True
        self._call("release_hold")
        self.emitter.emit("landing_hold", held_s=round(now - (progress.get("held_since") or now), 3),
                          waited_for=self._waited)

    def unresolved(self, events: List[Dict[str, Any]], quiet_s: float) -> List[str]:
        """Faults that may still take effect, each with why; [] when the hold can go."""
        now = time.time()
        out = []
        for i, spec in enumerate(self.models):
            fault = self.faults.get(i) or make_fault(i, spec)
            if judge_landing(fault, events, final=False).status != PENDING:
                continue
            view = FaultView(i, events)
            at = spec_record(spec.at)
            if view.injected is None:
                if at.get("time_s") is not None and i in self.faults and (
                        self.t_train is None or self.t_train + at["time_s"] > now):
                    out.append(f"fault {i}: time trigger at {at['time_s']} s after training started")
                elif at.get("time_s") is None and quiet_s < QUIET_S:
                    out.append(f"fault {i}: trigger {at} may still fire")
                continue
            if any(entry[5] == i and entry[4] != "none" for entry in self._timeline):
                out.append(f"fault {i}: follow-up actions pending")
                continue
            last = max([e.get("t_done") or e.get("t") or 0 for e in [view.injected] + view.actions])
            settle = fault.settle_s + (self.health_check_timeout_s if fault.waits_for_health_check else 0)
            if now - last < settle:
                out.append(f"fault {i}: no evidence yet ({now - last:.0f} of {settle:.0f} s)")
        return out

    def fire_now(self, spec: Any, settle_s: float = 120.0) -> Dict[str, Any]:
        """Inject a fault right away (a Chaos Toolkit action) and run its
        follow-ups (a preempted node's death, a replacement node) before
        returning. `spec` is a validated spec model; returns what was recorded."""
        record = self.inject_now(spec)
        index = record["fault"]
        deadline = time.time() + settle_s
        while time.time() < deadline and any(e[5] == index and e[4] != "none" for e in self._timeline):
            time.sleep(0.05)
            self.tick()
        return record

    def inject_now(self, spec: Any) -> Dict[str, Any]:
        """Add a fault to the run and inject it now; its follow-ups run on later
        ticks. `spec` is a validated spec model (or a soak's draw, a dict validated here);
        returns what was recorded."""
        index = len(self.models)
        if not isinstance(spec, FaultSpecBase):
            spec = spec_model(dict(spec, at=spec.get("at") or {"time_s": 0}))
        self.models.append(spec)
        self.faults[index] = make_fault(index, spec)
        self.tick()  # fresh worker-group membership
        return self._fire(index, time.time(), {}, gated=False)

    def heal_all(self) -> List[int]:
        """Heal every active fault now (a Chaos Toolkit rollback); returns their indices."""
        healed = [f.index for f in self._active]
        for fault in list(self._active):
            self._heal(fault)
        return healed

    def finish(self) -> None:
        """Heal what is still broken (hung workers, hogged CPUs, storage errors)."""
        for fault in list(self._active):
            self._heal(fault)
        self._timeline.clear()
        if self._own_agents:
            self.agents.close()

    # -------------------------------------------------------------- internals
    def make_emitter(self, history, run_name: str):
        """The injector's emitter on the run's book (here a history_service.BookHandle)."""
        return Emitter(history, "injector")

    def _call(self, method: str, *args: Any) -> Any:
        """A call on the run's history book: here the Ray actor (a torchrun run's
        injector calls its book in the harness process instead)."""
        return ray.get(getattr(self.history, method).remote(*args), timeout=30)

    def _send(self, method: str, *args: Any) -> None:
        """A call on the run's history book, not waited for: the actor runs the calls of one
        caller in order, so it is done before any later call of this process."""
        getattr(self.history, method).remote(*args)

    def _release(self, fault: int) -> None:
        """Let the worker held at this fault's gate go on (not waited for)."""
        self.history.release.remote(fault)

    def _ctx(self, event: Dict[str, Any], fault_index: int) -> FaultContext:
        def schedule(delay_s: float, fn: Callable[[], Dict[str, Any]], label: str, kind: str = "fault_action"):
            heapq.heappush(self._timeline, (time.time() + delay_s, next(self._ids), fn, label, kind, fault_index))

        def record(label: str, detail: Dict[str, Any]) -> None:
            self.emitter.emit("fault_action", fault=fault_index, fault_kind=self.faults[fault_index].kind,
                              action=label, detail=detail, t_requested=time.time(), t_done=time.time())

        return FaultContext(cluster=self.cluster, agents=self.agents, members=list(self._members),
                            storage_dir=self.storage_dir, history_path=self.history_path, event=event,
                            rng=self.rng, schedule=schedule, record=record, ops=rp, storage_fs=self.storage_fs)

    def _fire(self, index: int, t_requested: float, event: Dict[str, Any], gated: bool) -> Dict[str, Any]:
        fault = self.faults[index]
        base = {"fault": index, "fault_kind": fault.kind, "target_asked": fault.target,
                "trigger": spec_record(self.models[index].at), "t_requested": t_requested}
        record: Dict[str, Any] = dict(base)
        try:
            ctx = self._ctx(event, index)
            hit = self._attributed(fault, ctx, fault.inject(ctx))
            window = self._window(fault)
            record.update(kind="fault_injected", target_hit=hit, **window, t_done=time.time())
            self.emitter.emit("fault_injected", target_hit=hit, **window, t_done=record["t_done"], **base)
            self._active.append(fault)
            if fault.wants_resume:
                self.resume_requested = True
            if fault.duration_s and fault.heals_after_duration:
                self._ctx(event, index).schedule(fault.duration_s, lambda f=fault: self._heal(f),
                                                 f"heal fault {index}", kind="none")
        except FaultSkipped as e:
            record.update(kind="fault_skipped", reason=str(e))
            self.emitter.emit("fault_skipped", reason=str(e), t_done=time.time(), **base)
        except Exception as e:  # a fault that broke is recorded; the run goes on
            record.update(kind="fault_skipped", reason=f"{type(e).__name__}: {e}")
            self.emitter.emit("fault_skipped", reason=record["reason"],
                              traceback=traceback.format_exc()[-1500:], t_done=time.time(), **base)
        finally:
            if gated:
                self._release(index)
        return record

    def _window(self, fault) -> Dict[str, Any]:
        """{"window_s": the kind's window} for the fault_injected event ({} where the fault
        has none: its landing then uses the kind's default)."""
        try:
            return {"window_s": round(float(fault.window(self.health_check_timeout_s)), 1)}
        except Exception:  # noqa: BLE001 - evidence, never a reason to skip a fault that was done
            return {}

    @staticmethod
    def _attributed(fault, ctx: FaultContext, hit: Dict[str, Any]) -> Dict[str, Any]:
        """The hit with the victim's attempt id and the named node's facts (faults/base.py
        `attribution`): what its landing is judged by. Reading them never undoes a fault done."""
        try:
            return fault.attribution(ctx, hit)
        except Exception:  # noqa: BLE001 - the landing then says what is missing
            return hit

    def _heal(self, fault) -> None:
        if fault not in self._active:
            return
        self._active.remove(fault)
        try:
            healed = fault.heal(self._ctx({}, fault.index))
        except Exception as e:
            healed = {"error": f"{type(e).__name__}: {e}"}
        if healed is not None:
            self.emitter.emit("fault_healed", fault=fault.index, fault_kind=fault.kind, detail=healed,
                              t_done=time.time())

    def _run_action(self, due: float, fn, label: str, kind: str, fault: int) -> None:
        try:
            detail = fn()
        except Exception as e:
            detail = {"error": f"{type(e).__name__}: {e}"}
        if kind != "none":
            self.emitter.emit(kind, fault=fault, fault_kind=self.faults[fault].kind, action=label,
                              detail=detail, t_requested=due, t_done=time.time())
