"""The Train controller callback that records controller-side events.

It runs inside the TrainController actor. A callback that raises becomes a
ControllerError and changes the run, so every hook here swallows its own
errors: recording must never alter what it records. Each event waits for the
history actor's acknowledgement (a millisecond or two on the same node), so a
controller killed right after a decision has already handed that decision over.
"""

from __future__ import annotations

import os
from typing import Any, Dict, Optional

import ray

from ftharness.harness.cluster import ray_private as rp
from ftharness.history.model import LIMIT_FIELD as _LIMIT_KEY
from ftharness.harness.cluster.history_service import Emitter

RUN_START_TIMEOUT_S = 120.0   # as the driver waits for it (runner.HISTORY_START_TIMEOUT_S)


def clip_error(text: str, limit: int = 1000) -> str:
    """Head and tail of a long error: Ray puts the traceback first and the exception that
    says what happened (a Gloo timeout, a connection refused) last."""
    if len(text) <= limit:
        return text
    half = (limit - 5) // 2
    return f"{text[:half]} ... {text[-half:]}"


def _safe(fn):
    def wrapper(self, *args, **kwargs):
        try:
            return fn(self, *args, **kwargs)
        except Exception:  # noqa: BLE001 - a raise here would become a ControllerError
            return None

    wrapper.__name__ = fn.__name__
    return wrapper


class ControllerRecorder(rp.ControllerCallback, rp.WorkerGroupCallback, rp.ReportCallback):
    """Records state changes, failure decisions with their budget class,
    worker-group lifecycles and checkpoint registrations."""

    def __getstate__(self):
        return {"book": self.book, "run_name": self.run_name, "failure_config": self.failure_config, "_emitter": None,
                "_attempt_id": None, "_counts": dict(self._counts), "_recorded": self._recorded}

    def _emit(self, kind: str, **fields: Any) -> None:
        if self._emitter is None:
            if self._recorded:   # run_start first: nothing of this fit() may come before it
                ray.get(self._recorded[0], timeout=RUN_START_TIMEOUT_S)
            self._emitter = Emitter(self.book, "controller")
        attempt = fields.pop("attempt_id", self._attempt_id)
        # pid: the controller this run owns, so kill_controller never hits another run's
        self._emitter.emit(kind, wait=True, attempt_id=attempt, pid=os.getpid(), **fields)

    # ---------------------------------------------------------------- controller
    @_safe
    def after_controller_state_update(self, previous_state, current_state):
        prev, cur = rp.state_name(previous_state), rp.state_name(current_state)
        if prev == cur:
            return
        err = rp.state_error(current_state)
        fields: Dict[str, Any] = {"prev": prev, "cur": cur}
        if err is not None:
            fields["error_type"] = type(err).__name__
            fields["error"] = clip_error(str(err))
            failures = getattr(err, "worker_failures", None) or {}
            fields["worker_failures"] = {str(k): type(v).__name__ for k, v in failures.items()}
            ctrl = getattr(err, "controller_failure", None)
            if ctrl is not None:
                fields["controller_failure"] = type(ctrl).__name__
        self._emit("controller_state", **fields)
        if err is not None and cur in ("RESTARTING", "RESCHEDULING", "SHUTTING_DOWN", "ERRORED"):
            if cur == "ERRORED" and prev == "SHUTTING_DOWN":
                return  # already recorded when SHUTTING_DOWN(ERRORED) was entered
            self._record_failure(err, retry=cur in ("RESTARTING", "RESCHEDULING"))

    def __init__(self, book, failure_config=None, recorded: Optional[list] = None):
        self.book = book              # the run's book (ftharness.harness.cluster.history_service.BookHandle)
        self.run_name = book.run
        #: [ref of the run_start hand-over]: the controller starts while the history actor does
        #: (ftharness.harness.run.runner.ScenarioRunner.submit), and its first event waits for it
        self._recorded = recorded
        self.failure_config = dict(failure_config or {})
        self._emitter = None
        self._attempt_id = None
        self._counts: Dict[str, int] = {"worker_group": 0, "preemption": 0, "controller": 0}

    def _record_failure(self, err: BaseException, retry: bool) -> None:
        budget = rp.classify_failure(err)
        from ray.train.v2.api.exceptions import ControllerError

        retryable = True
        if isinstance(err, ControllerError):
            ctrl = type(getattr(err, "controller_failure", None)).__name__
            retryable = ctrl in rp.retryable_controller_errors()
        if retryable and budget in self._counts:
            self._counts[budget] += 1
        self._emit(
            "failure",
            budget=budget if retryable else "none",
            decision="RETRY" if retry else "RAISE",
            error_type=type(err).__name__,
            count=self._counts.get(budget, 0) if retryable else 0,
            limit=self.failure_config.get(_LIMIT_KEY.get(budget, ""), None),
            counts=dict(self._counts),
            controller_failure=type(getattr(err, "controller_failure", None)).__name__
            if getattr(err, "controller_failure", None) is not None else None,
            preempted_deaths=rp.preempted_ranks(err),
            drain_timed_out=getattr(err, "drain_timed_out", None),
        )

    # --------------------------------------------------------------- worker group
    @_safe
    def before_worker_group_start(self, worker_group_context):
        self._attempt_id = worker_group_context.run_attempt_id
        self._emit("attempt_start", num_workers=worker_group_context.num_workers)

    @_safe
    def after_worker_group_start(self, worker_group):
        members = rp.worker_group_members(worker_group)
        self.book.announce_group.remote(self._attempt_id, members)
        self._emit("worker_group_started", workers=members, world_size=len(members))

    @_safe
    def before_worker_group_shutdown(self, worker_group):
        self._emit("worker_group_shutdown", errors=rp.worker_group_errors(worker_group))

    # ------------------------------------------------------------------- reports
    @_safe
    def after_report(self, training_report, metrics):
        ckpt = getattr(training_report, "checkpoint", None)
        if ckpt is None:
            return
        step = None
        for m in metrics or []:
            if isinstance(m, dict) and "ftharness_step" in m:
                step = m["ftharness_step"]
                break
        self._emit(
            "checkpoint_registered",
            checkpoint=ckpt.path.rstrip("/").split("/")[-1],
            path=ckpt.path,
            step=step,
        )
