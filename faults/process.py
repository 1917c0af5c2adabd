"""Faults on one training worker process: kill it, or hang it.

`kill_worker` SIGKILLs the worker actor's process through the agent on its node
(a hard crash: OOM killer, segfault); with `graceful: true` it asks Ray to kill
the actor instead (`ray.kill` through the GCS). `hang_worker` SIGSTOPs the
process: it stops answering Ray Train's health-check polls, which is the path
the controller's `RAY_TRAIN_WORKER_HEALTH_CHECK_TIMEOUT_S` exists for; heal
sends SIGCONT. A hang inside user code would not trip that check (training runs
in a thread; polls are answered by the actor's main thread). `crash_worker`
raises inside the train function: the worker does it itself (ftharness.harness.job.instrument,
from the plan the injector hands out), so only its landing is judged here.

Each lands when it hit the named worker (rank, pid) of the attempt recorded at
injection and that attempt then failed within the kind's window (faults/base.py:
60 s for a kill or a crash, which the next health poll or collective sees at
once; a hang's health-check timeout more, as the hang is seen only then); Ray
charges all three to `max_failures`.
"""

from __future__ import annotations

import signal
from typing import Any, Dict, Literal, Optional

from pydantic import Field, model_validator

from ftharness.faults.base import (CERTAIN, GRACEFUL_IS_RAY_ONLY, MAYBE, FailureClaim, Fault, FaultContext, FaultView,
                                   Landing, TargetedSpec, with_error_before_failure)
from ftharness.errors import ChaosCrash, FaultSkipped

CRASH_POINTS = ("before_step", "after_step", "after_checkpoint_write", "before_report", "on_restore")


class KillWorkerSpec(TargetedSpec):
    """SIGKILL the target worker's process; `graceful: true` asks Ray to kill the actor instead."""

    kind: Literal["kill_worker"]
    graceful: Optional[bool] = None


class CrashWorkerSpec(TargetedSpec):
    """The train function of the target rank raises `ChaosCrash` at `where`."""

    kind: Literal["crash_worker"]
    where: Literal[CRASH_POINTS] = "before_step"  # type: ignore[valid-type]

    @model_validator(mode="after")
    def _inside_the_worker(self):
        if self.target.names_node:
            raise ValueError("target: crash_worker takes rank or random (it runs inside the worker)")
        if self.where != "on_restore" and self.at.step is None:
            raise ValueError(f"at: crash_worker {self.where} needs {{step: N}}")
        return self


class HangWorkerSpec(TargetedSpec):
    """SIGSTOP the target worker's process; SIGCONT after `duration_s` (default: when the run ends)."""

    kind: Literal["hang_worker"]
    duration_s: Optional[float] = Field(None, gt=0)


class KillWorker(Fault):
    """Kills one training worker process (SIGKILL, or SIGTERM when graceful)."""

    kind = "kill_worker"
    kills_process = True
    Spec = KillWorkerSpec
    runtimes = ("ray_train", "torchrun")
    ray_only_args = GRACEFUL_IS_RAY_ONLY
    runs_in = "node_agent"
    causes = "worker_group"
    explore_args = {"graceful": (None, True)}
    explore_rank = 0
    soak_args: Dict[str, Any] = {}
    soak_weight = 3

    def inject(self, ctx: FaultContext) -> Dict[str, Any]:
        v = self.victim(ctx)
        if self.spec.graceful:
            ctx.ops.kill_actor_by_id(v["actor_id"], no_restart=True)
            how = "ray.kill"
        else:
            if not ctx.agents.signal(v["node_id"], v["pid"], signal.SIGKILL):
                raise FaultSkipped(f"rank {v['rank']} (pid {v['pid']}) was already gone")
            how = "SIGKILL"
        return {**v, "how": how}


class CrashWorker(Fault):
    """Raises inside the train function at a chosen point (the user-bug class)."""

    kind = "crash_worker"
    echoes = classmethod(lambda cls, spec: {"where": spec.where})   # (recorded by the worker at its crash point)
    Spec = CrashWorkerSpec
    runtimes = ("ray_train", "torchrun")
    runs_in = "worker"
    causes = "worker_group"
    explore_args = {"where": CRASH_POINTS}
    explore_rank = 1
    step_only = True
    recovers_like = "kill_worker"

    @classmethod
    def explore_draft(cls, draft: Dict[str, Any], restore_comes: Optional[bool]) -> Dict[str, Any]:
        """At an event (a restore) it crashes on the restore: every other crash point is a step's;
        where no restore comes, a crash there never fires (a real example's INCONCLUSIVE)."""
        if (draft.get("at") or {}).get("step") is None:
            draft["where"] = "on_restore"
        if draft.get("where") == "on_restore" and restore_comes is False:
            draft["where"] = "before_step"
        return draft

    def inject(self, ctx: FaultContext) -> Dict[str, Any]:
        raise FaultSkipped("crash_worker is done by the worker itself (ftharness.harness.job.instrument)")

    @classmethod
    def act_in_worker(cls, plan, worker, where: str, step: Optional[int]) -> None:
        raise ChaosCrash(f"ftharness crash_worker fault {plan['fault']}: rank {worker.rank} {where} step {step}")


class HangWorker(Fault):
    """Stops one worker process (SIGSTOP) so the health check must notice. Under torchrun
    nothing health-checks workers: the other ranks' next collective times out after
    `workload.collective_timeout_s`, their worker raises and its agent restarts the group;
    the landing evidence names that error."""

    kind = "hang_worker"
    cuts_off = True
    Spec = HangWorkerSpec
    runtimes = ("ray_train", "torchrun")
    runs_in = "node_agent"
    waits_for_health_check = True
    causes = "worker_group"
    explore_args = {"duration_s": (None, 4.0)}
    explore_rank = 4
    soak_args: Dict[str, Any] = {}
    recovers_like = "kill_worker"

    @classmethod
    def failure_claim(cls, spec: Any) -> FailureClaim:
        """A stall with a `duration_s` may end before the health check sees it."""
        return FailureClaim(cls.causes, MAYBE if spec.duration_s else CERTAIN)

    def __init__(self, index, spec):
        super().__init__(index, spec)
        self._stopped: Optional[Dict[str, Any]] = None

    def landing(self, view: FaultView) -> Landing:
        return with_error_before_failure(super().landing(view), view)

    def inject(self, ctx: FaultContext) -> Dict[str, Any]:
        v = self.victim(ctx)
        if not ctx.agents.signal(v["node_id"], v["pid"], signal.SIGSTOP):
            raise FaultSkipped(f"rank {v['rank']} (pid {v['pid']}) was already gone")
        self._stopped = v
        return {**v, "how": "SIGSTOP"}

    def heal(self, ctx: FaultContext) -> Optional[Dict[str, Any]]:
        if self._stopped is None:
            return None
        v, self._stopped = self._stopped, None
        try:   # False: the process is gone (Ray ended the hung worker when it restarted the group)
            resumed = ctx.agents.signal(v["node_id"], v["pid"], signal.SIGCONT)
            gone = not resumed
        except Exception:  # the node or its agent is gone: whether the process lives is not known
            resumed, gone = False, None
        return {**v, "how": "SIGCONT", "resumed": resumed, **({"gone": gone} if gone is not None else {})}
