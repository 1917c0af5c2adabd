"""Synthetic histories of the reference workload, to test the checks without Ray.

`generate(plan)` plays a run of the reference workload the way Ray Train 2.60
would under `plan.faults`, and returns the events it would record
(docs/history.md) with the context a runner would pass to the checks. What the
checks rely on is modelled: restores from the latest registered checkpoint,
the failure policy (`ftharness.scenarios.policy_model`), world sizes that change between
attempts, both data sources, controller startup failures retried under the same
attempt id, and a new fit() after the controller dies. The result is a valid
history by construction; tests plant violations into it, or ask the generator
for a job with a defect (`Plan.defect`, one of `DEFECTS`), which it then plays
through consistently: the restarted attempts redo their steps from what they
restored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import numpy as np

from ftharness.scenarios.reference_data import (ACC_FIELDS, WorkloadConfig, accumulate, expected_accumulators, global_batch,
                                      rank_slice)
from ftharness.faults.controller import KillController
from ftharness.faults.node import PreemptNode
from ftharness.faults.process import KillWorker
from ftharness.faults.resources import StarveResources
from ftharness.faults.storage import StorageErrors
from ftharness.scenarios import policy_model
from ftharness.scenarios.properties.base import PropertyContext

#: seconds of notice a synthetic drain gives (preempt_node's default notice_s, faults/node.py)
NOTICE_S = 3.0
#: fault class -> (injected fault kind, budget it should be charged to, error type)
FAULTS: Dict[str, Tuple[str, Optional[str], str]] = {
    "worker_group": (KillWorker.kind, "worker_group", "WorkerGroupError"),
    "preemption": (PreemptNode.kind, "preemption", "PreemptionError"),
    "preemption_death": (PreemptNode.kind, "preemption", "WorkerGroupError"),
    "controller": (StarveResources.kind, "controller", "ControllerError"),
    "controller_fatal": (StorageErrors.kind, "none", "ControllerError"),
    "controller_kill": (KillController.kind, None, "ActorDiedError"),
}
STARTUP = ("controller", "controller_fatal")   # classes that strike while a group starts
#: jobs with a defect the generator can play (`Plan.defect`):
DEFECTS = {
    # saves its model to a local path and hands no checkpoint to ray.train.report: every restart
    # begins again from step 0
    "no_checkpoints": "reports no checkpoint; restarts redo every step",
    # Ray registers its checkpoints but a restart restores none of them
    "restore_nothing": "restarts restore nothing although checkpoints were registered",
    # a restart restores the oldest registered checkpoint, however many came after it
    "restore_oldest": "restarts restore the oldest registered checkpoint",
    # the job does not restore its sample counter: after a restart `count` counts from 0 again
    "counter_reset": "restarts report the `count` metric from 0 again",
}


@dataclass
class Fault:
    cls: str                          # a key of FAULTS
    after_steps: int = 1              # steps the attempt completes first (ignored at startup)
    after_checkpoint: bool = False    # on a checkpoint step: strike after it is registered
    recovery_s: float = 2.0           # failure -> next attempt's first step, roughly
    world_size: Optional[int] = None  # world size of the next attempt (elastic)


@dataclass
class Plan:
    workload: WorkloadConfig
    num_workers: int = 2
    failure_config: Dict[str, int] = field(default_factory=dict)
    faults: List[Fault] = field(default_factory=list)
    step_s: float = 0.1
    defect: Optional[str] = None      # a key of DEFECTS: the job (or Ray) misbehaves that way


@dataclass
class Synthetic:
    events: List[dict]
    context: PropertyContext          # what a runner would pass the checks (the declared keys only)
    recoveries: List[float]           # seconds from each fault retried to the next first step (model recoveries)


def generate(plan: Plan) -> Synthetic:
    return _Run(plan).play()


class _Run:
    """The simulation state; one instance per generated history."""

    def __init__(self, plan: Plan):
        self.plan, self.cfg = plan, plan.workload
        self.events: List[dict] = []
        self.t = 1_700_000_000.0
        self.faults = list(plan.faults)
        self.injected: List[dict] = []
        self.latest: Optional[Tuple[str, int, np.ndarray]] = None  # name, step, accumulators
        self.oldest: Optional[Tuple[str, int, np.ndarray]] = None  # the first registered checkpoint
        self.counted_from = 0.0           # `count` at the restore: counter_reset reports count less it
        self.pending: List[dict] = []      # faults whose failure was retried, awaiting a first step
        self.recoveries: List[float] = []
        self.fit = 0
        self.pids = 1000
        self.classes: List[str] = []
        self.final: Optional[np.ndarray] = None

    def emit(self, kind: str, source: str, **fields) -> dict:
        if source == "controller":
            fields.setdefault("pid", self.controller_pid())
        e = {"seq": len(self.events) + 1, "t": round(self.t, 6), "kind": kind, "source": source,
             "run": "synthetic", **fields}
        self.events.append(e)
        self.t += 0.001
        return e

    # ------------------------------------------------------------------ fits
    def play(self) -> Synthetic:
        outcome, error = "killed", None
        while outcome == "killed":
            outcome, error = self.play_fit()
        cfg = self.cfg
        context: PropertyContext = {
            "failure_config": dict(self.plan.failure_config),
            "outcome": outcome,
            "error_type": error,
            "workload": cfg.to_dict(),
            "data": cfg.data,
            "expected_final": expected_accumulators(cfg) if cfg.data == "resumable" else None,
            "final": self.final.tolist() if self.final is not None else None,
            "recovery_bound_s": max(self.recoveries) + 1.0 if self.recoveries else None,
            "injected": self.injected,
        }
        return Synthetic(self.events, context, self.recoveries)

    def play_fit(self) -> Tuple[str, Optional[str]]:
        """One fit(): 'succeeded', 'failed' or 'killed' (the controller died; resume)."""
        self.fit += 1
        self.classes = []
        self.emit("run_start", "harness", scenario="synthetic", run_name="synthetic",
                  storage_path="/tmp/synthetic", resume_of=None, workload=self.cfg.to_dict(),
                  failure_config=dict(self.plan.failure_config), num_workers=self.plan.num_workers,
                  fit_index=self.fit)
        ws, ordinal = self.plan.num_workers, 0
        while True:
            ordinal += 1
            aid = f"{self.fit:04x}{ordinal:04x}" + "0" * 24
            error = self.schedule(aid, ws)
            if error is None:
                outcome, error, next_ws = self.train(aid, ordinal, ws)
                if outcome is None:
                    ws = next_ws or ws
                    continue
            else:
                outcome = "failed"
            self.emit("run_end", "harness", outcome="succeeded" if outcome == "succeeded" else "failed",
                      error_type=error, error=None if outcome == "succeeded" else f"synthetic {error}",
                      metrics={}, checkpoint=self.latest[0] if self.latest else None,
                      return_value=self._returned(outcome), fit_index=self.fit)
            return outcome, error

    def _returned(self, outcome: str):
        """Rank 0's return value as a real run's run_end records it (the final accumulators)."""
        if outcome != "succeeded" or self.final is None:
            return None
        return {"step": self.cfg.steps, "acc": self.final.tolist()}

    # --------------------------------------------------------------- failures
    def inject(self, aid: str, workers: Optional[List[dict]] = None) -> Tuple[Fault, dict]:
        """The next fault, and its fault_injected event with the target it hit, as the
        injector records it (faults/base.py attribution: the victim's attempt and pid)."""
        fault = self.faults.pop(0)
        kind, budget, _ = FAULTS[fault.cls]
        index = len(self.injected)
        self.injected.append({"kind": kind, "budget": budget, "fault": index})
        event = self.emit("fault_injected", "injector", fault=index, fault_kind=kind, target_asked={},
                          target_hit=self.hit(kind, aid, workers or []), t_requested=self.t, t_done=self.t,
                          detail="")
        if kind == PreemptNode.kind:   # the notice runs out (preempt_node's default notice_s) before the failure
            self.t += NOTICE_S
        if fault.cls == "preemption_death":   # the drained node killed at its deadline, as preempt_node does
            hit = event.get("target_hit") or {}
            self.emit("fault_action", "injector", fault=index, fault_kind=kind,
                      action=f"preempted node dies (fault {index})", t_requested=self.t, t_done=self.t,
                      detail={"node_id": hit.get("node_id"), "how": "remove_node(SIGKILL)", "ms_after_deadline": 0.0})
        if kind == StorageErrors.kind:   # the chaos filesystem's first error, as the injector records it
            self.emit("fault_action", "injector", fault=index, fault_kind=kind, action=f"storage fault {index} "
                      "reached the job", detail={"errors_returned": 1, "delays": 0,
                                                 "first": {"op": "write", "path": "/tmp/synthetic/x"}})
        return fault, event

    def hit(self, kind: str, aid: str, workers: List[dict]) -> dict:
        """What a fault of `kind` hit: the last rank of a running group (its node, for node
        faults), this fit's controller, or the cluster's CPUs."""
        if kind == KillController.kind:
            return {"pid": self.controller_pid(), "how": "SIGKILL"}
        if kind == StarveResources.kind:
            return {"cpus_requested": 4, "how": "a hog actor queued for every CPU of every worker node",
                    "attempt_id": aid}
        if kind == StorageErrors.kind:
            return {"ops": ["write"], "id": "0-synthetic", "attempt_id": aid}
        if not workers:
            return {}
        v = workers[-1]
        if kind == PreemptNode.kind:
            return {"node_id": v["node_id"], "ranks": sorted(w["rank"] for w in workers if w["node_id"] == v["node_id"]),
                    "attempt_id": aid, "how": "drain(PREEMPTION)", "deadline_ms": int(round((self.t + NOTICE_S) * 1000))}
        return {**{k: v[k] for k in ("rank", "pid", "node_id", "actor_id", "attempt", "attempt_id")}, "how": "SIGKILL"}

    def controller_pid(self) -> int:
        """The pid of this fit's controller (its recorder puts it on every event)."""
        return 900 + self.fit

    def fail(self, aid: str, fault: Fault, state: str, injected: dict) -> Tuple[str, str]:
        """The controller meets the failure `injected` caused: (decision, error type)."""
        error = FAULTS[fault.cls][2]
        self.classes.append(fault.cls)
        d = policy_model.expected_outcome(self.plan.failure_config, self.classes).decisions[-1]
        retry_state = "RESCHEDULING" if state == "SCHEDULING" else "RESTARTING"
        self.emit("controller_state", "controller", attempt_id=aid, prev=state,
                  cur=retry_state if d.decision == "RETRY" else "SHUTTING_DOWN",
                  error_type=error, error="synthetic", worker_failures={})
        self.emit("failure", "controller", attempt_id=aid, budget=d.budget,
                  decision=d.decision, error_type=error, count=d.count, counts=d.counts,
                  limit=d.limit if d.budget != "none" else None,
                  drain_timed_out=True if fault.cls == "preemption" else None,
                  controller_failure="WorkerGroupStartupTimeoutError" if fault.cls == "controller" else None)
        if d.decision == "RETRY":
            self.pending.append(injected)
        self.t += fault.recovery_s
        return d.decision, error

    def schedule(self, aid: str, ws: int) -> Optional[str]:
        """Start attempts under `aid` until the group starts; the error if the run raised."""
        while True:
            self.emit("attempt_start", "controller", attempt_id=aid, num_workers=ws)
            if not self.faults or self.faults[0].cls not in STARTUP:
                return None
            fault, injected = self.inject(aid)
            decision, error = self.fail(aid, fault, "SCHEDULING", injected)
            if decision == "RAISE":
                return error

    # --------------------------------------------------------------- training
    def train(self, aid: str, ordinal: int, ws: int):
        """Run a started group: (outcome or None to restart, error type, next world size)."""
        workers = [{"rank": r, "node_id": f"node-{(r + ordinal) % 4}", "pid": self._pid(),
                    "actor_id": f"actor-{aid[:8]}-{r}", "attempt": ordinal, "attempt_id": aid,
                    "world_size": ws} for r in range(ws)]
        self.emit("worker_group_started", "controller", attempt_id=aid, world_size=ws,
                  workers=[{k: w[k] for k in ("rank", "node_id", "pid", "actor_id")} for w in workers])
        name, step, acc = self.restore_point(ordinal)
        acc = acc.copy()
        self.counted_from = float(acc[0]) if self.plan.defect == "counter_reset" else 0.0
        for w in workers:
            self._worker(w, "worker_start", restored_checkpoint=name, restored_step=step if name else None,
                         restored_intact=True if name else None)
        fault = self.faults[0] if self.faults else None
        done = 0
        for s, epoch, rows in self.batches(step, ws, ordinal):
            if fault is not None and done >= fault.after_steps:
                return self.crash(aid, workers)
            for w in workers:
                e = self._worker(w, "step", step=s, rows=rows[w["rank"]], n_rows=len(rows[w["rank"]]),
                                 epoch=epoch, loss=1.0 / s)
                self._recovered(e)
            acc += accumulate(np.array(sum(rows, []), dtype=np.int64), epoch, self.cfg.rows)
            done += 1
            if s % self.cfg.checkpoint_every == 0 or s == self.cfg.steps:
                if fault is not None and done >= fault.after_steps and not fault.after_checkpoint:
                    self._worker(workers[0], "checkpoint_written", step=s, local_path="/tmp/orphan")
                    return self.crash(aid, workers)
                self.checkpoint(aid, ordinal, workers, s, acc)
            self.t += self.plan.step_s
        for w in workers:
            self._worker(w, "worker_end", step=self.cfg.steps)
        self.emit("controller_state", "controller", attempt_id=aid, prev="RUNNING", cur="SHUTTING_DOWN")
        self.emit("worker_group_shutdown", "controller", attempt_id=aid, errors={})
        self.emit("controller_state", "controller", attempt_id=aid, prev="SHUTTING_DOWN", cur="FINISHED")
        self.final = acc
        return "succeeded", None, None

    def crash(self, aid: str, workers: List[dict]):
        fault, injected = self.inject(aid, workers)
        if fault.cls == "controller_kill":
            return "killed", "ActorDiedError", None
        decision, error = self.fail(aid, fault, "RUNNING", injected)
        self.emit("worker_group_shutdown", "controller", attempt_id=aid,
                  errors={str(workers[-1]["rank"]): "ActorDiedError"})
        if decision == "RAISE":
            self.emit("controller_state", "controller", attempt_id=aid, prev="SHUTTING_DOWN", cur="ERRORED",
                      error_type=error)
            return "failed", error, None
        return None, None, fault.world_size

    def restore_point(self, ordinal: int) -> Tuple[Optional[str], int, np.ndarray]:
        """(checkpoint, step, accumulators) an attempt starts from: the latest registered one,
        unless the plan's defect says otherwise."""
        restart = ordinal > 1 or self.fit > 1
        if self.latest is None or (restart and self.plan.defect == "restore_nothing"):
            return None, 0, np.zeros(4)
        if restart and self.plan.defect == "restore_oldest":
            return self.oldest
        return self.latest

    def checkpoint(self, aid: str, ordinal: int, workers: List[dict], step: int, acc: np.ndarray) -> None:
        metrics = {"step": step, "loss": 1.0 / step, "reason": "cadence",
                   **dict(zip(ACC_FIELDS, acc.tolist())), "ftharness_step": step}
        metrics["count"] -= self.counted_from
        if self.plan.defect == "no_checkpoints":
            self._worker(workers[0], "checkpoint_written", step=step, local_path="/tmp/model.pt")
            for w in workers:
                self._worker(w, "report", step=step, checkpoint=None, metrics=dict(metrics))
            return
        name = f"checkpoint_f{self.fit}_a{ordinal}_s{step:05d}"
        self._worker(workers[0], "checkpoint_written", step=step, local_path=f"/tmp/{name}")
        self.emit("checkpoint_registered", "controller", attempt_id=aid, checkpoint=name,
                  path=f"/tmp/synthetic/synthetic/{name}", step=step)   # storage/run/checkpoint
        for w in workers:
            self._worker(w, "report", step=step, checkpoint=name if w["rank"] == 0 else None,
                         metrics=dict(metrics))
        self.latest = (name, step, acc.copy())
        self.oldest = self.oldest or self.latest

    def batches(self, step: int, ws: int, ordinal: int):
        """(1-based step, epoch, rows per rank) from the restored step on, as the workload does."""
        cfg = self.cfg
        if cfg.data == "resumable":
            for s in range(step, cfg.steps):
                batch = global_batch(cfg, s)
                yield s + 1, s // cfg.steps_per_epoch, [rank_slice(batch, r, ws).tolist() for r in range(ws)]
            return
        yield from self._ray_data_batches(step, ws, ordinal)

    def _ray_data_batches(self, step: int, ws: int, ordinal: int):
        """Ray Data's equal streaming split: every attempt re-reads its epoch from the start."""
        cfg = self.cfg
        local = max(1, cfg.batch_size // ws)
        per_rank = cfg.rows // ws
        s, epoch = step, step // cfg.steps_per_epoch
        while s < cfg.steps and per_rank // local:
            perm = np.random.default_rng([cfg.seed, self.fit, ordinal, epoch]).permutation(cfg.rows)
            shards = [perm[r * per_rank:(r + 1) * per_rank] for r in range(ws)]
            for j in range(per_rank // local):
                if s >= cfg.steps:
                    return
                s += 1
                yield s, epoch, [sh[j * local:(j + 1) * local].tolist() for sh in shards]
            epoch += 1

    # ---------------------------------------------------------------- helpers
    def _worker(self, w: dict, kind: str, **fields) -> dict:
        base = {k: w[k] for k in ("attempt", "attempt_id", "rank", "world_size", "node_id", "pid")}
        return self.emit(kind, "worker", **base, **fields)

    def _recovered(self, step_event: dict) -> None:
        """A recovery as ftharness.history.model measures it: from the fault being
        done to the first step after it."""
        for injected in self.pending:
            self.recoveries.append(step_event["t"] - injected["t_done"])
        self.pending = []

    def _pid(self) -> int:
        self.pids += 1
        return self.pids
