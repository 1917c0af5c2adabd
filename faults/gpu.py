"""Faults of GPU training: a CUDA error in the train function, a rank hung in a collective.

Both are done by the worker itself, like `crash_worker` (faults/process.py): the
injector hands each worker its plan (ftharness.harness.run.injector.crash_plans) and
the instrumentation acts at the exact step (ftharness.harness.job.instrument,
ftharness.harness.job.device), recording `fault_injected` first. So only their
specs and landings live here.

`cuda_error` runs a real CUDA operation that fails on the target rank's GPU before
step N: `how: device_assert` (default) indexes a CUDA tensor out of bounds, so a
device-side assert fires and the next synchronize raises `CUDA error: device-side
assert triggered` (sticky: the process's CUDA context is unusable, as after a real
kernel bug); `how: invalid_device` allocates on a device ordinal past the visible
ones (`CUDA error: invalid device ordinal`, not sticky). torch raises either as
`torch.AcceleratorError` (a RuntimeError). It needs GPU workers: on a CPU cluster it
is refused at validation. Lands when that rank's `worker_error` names a CUDA error
and a failure decision followed; Ray charges it to `max_failures`.

`collective_hang` stalls the target rank before step N (in the train thread, so
Ray's health check, answered by the actor's main thread, sees nothing); its peers
enter the step's all-reduce and block in it until the collective timeout the
scenario sets (`workload.collective_timeout_s`: gloo raises, NCCL's watchdog aborts
the communicator), or, with `hang_detector: true` on NCCL, until Ray 2.60's NCCL RAS
hang detector raises `NCCLHangError`. Works on CPU with gloo. Lands when a failure
decision followed and either a peer's `worker_error` or the failure itself names a
collective timeout or the hang detector; Ray charges it to `max_failures`.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Iterable, Literal, Optional

from pydantic import Field, model_validator

from ftharness.errors import FaultSkipped
from ftharness.faults.base import (CERTAIN, LANDED, MAYBE, MISSED, PENDING, FailureClaim, Fault, FaultContext, FaultView,
                                   Landing, TargetedSpec, describe_failure)

#: how cuda_error makes its CUDA error
CUDA_HOWS = ("device_assert", "invalid_device")
#: what a CUDA error looks like in a worker's error (torch's messages, its exception types)
CUDA_ERROR = re.compile(r"CUDA error|AcceleratorError|device-side assert|invalid device ordinal|cudaError",
                        re.IGNORECASE)
#: what a collective that timed out, or the hang detector, looks like in an error
COLLECTIVE_TIMEOUT = re.compile(
    r"timed out|timeout|watchdog|NCCLHangError|NCCL communicator was aborted|ncclRemoteError|"
    r"Connection closed by peer|Connection reset by peer", re.IGNORECASE)


class CudaErrorSpec(TargetedSpec):
    """A real CUDA error on the target rank's GPU, raised in its train function before step `at.step`."""

    kind: Literal["cuda_error"]
    how: Literal[CUDA_HOWS] = Field(  # type: ignore[valid-type]
        "device_assert", description="device_assert: an out-of-bounds CUDA index (sticky device-side assert); "
                                     "invalid_device: an allocation past the visible devices")

    @model_validator(mode="after")
    def _inside_the_worker(self):
        if self.target.names_node:
            raise ValueError("target: cuda_error takes rank or random (it runs inside the worker)")
        if self.at.step is None:
            raise ValueError("at: cuda_error needs {step: N} (it raises before that step)")
        return self


class CollectiveHangSpec(TargetedSpec):
    """The target rank stalls before step `at.step` (for `duration_s`, default until the run
    ends) while its peers block in that step's all-reduce until the collective timeout."""

    kind: Literal["collective_hang"]
    duration_s: Optional[float] = Field(None, gt=0, description="how long the rank stalls (default: until "
                                                                "its process is ended)")
    #: also turn on Ray 2.60's NCCL RAS hang detector (RAY_TRAIN_ENABLE_NCCL_HANG_DETECTOR, action
    #: fail) so it can end the hang with NCCLHangError; NCCL only (GPU workers)
    hang_detector: Optional[bool] = None
    #: how long the detector waits on a communicator that makes no progress (its default: 600 s)
    detector_confirm_s: Optional[float] = Field(None, gt=0)

    @model_validator(mode="after")
    def _inside_the_worker(self):
        if self.target.names_node:
            raise ValueError("target: collective_hang takes rank or random (it runs inside the worker)")
        if self.at.step is None:
            raise ValueError("at: collective_hang needs {step: N} (the rank stalls before that step)")
        if self.detector_confirm_s is not None and not self.hang_detector:
            raise ValueError("detector_confirm_s: only with hang_detector: true")
        return self


class CudaError(Fault):
    """A CUDA error inside the train function (a kernel bug, a bad device index)."""

    kind = "cuda_error"
    Spec = CudaErrorSpec
    refused_on = {"torchrun": "is Ray Train-only for now"}
    runs_in = "worker"
    causes = "worker_group"
    explore_rank = 11

    @classmethod
    def cpu_problem(cls, spec, why_cpu: str, index: int) -> Optional[str]:
        return (f"faults[{index}].kind: {cls.kind} needs GPU workers, but this scenario trains on CPU ({why_cpu}); "
                f"give cluster.gpus_per_node >= 1, or drop it")

    @classmethod
    def hit_in_worker(cls, plan, worker) -> Dict[str, Any]:
        return {"device": worker.device, "how": plan.get("how")}

    @classmethod
    def act_in_worker(cls, plan, worker, where: str, step: Optional[int]) -> None:
        worker.raise_cuda_error(plan.get("how") or "device_assert")

    def inject(self, ctx: FaultContext) -> Dict[str, Any]:
        raise FaultSkipped("cuda_error is done by the worker itself (ftharness.harness.job.instrument)")

    def landing(self, view: FaultView) -> Landing:
        hit = view.hit
        what = f"cuda_error ({hit.get('how', '?')}) on rank {hit.get('rank')} ({hit.get('device', '?')}) " \
               f"before step {hit.get('step')} at seq {view.seq}"
        err = next((e for e in view.events if e.get("kind") == "worker_error" and (e.get("seq") or 0) > view.seq
                    and e.get("pid") == hit.get("pid")), None)
        if err is None:
            return Landing(PENDING, f"{what}; its rank recorded no error yet")
        text = f"{err.get('error_type')}: {err.get('error')}"
        if not CUDA_ERROR.search(text):
            return Landing(MISSED, f"{what}, but its rank raised no CUDA error ({_clip(text)})")
        after = view.failures_after(view.seq)
        if not after:
            return Landing(PENDING, f"{what}; rank raised {_clip(text)}; no failure decision followed")
        f = after[0]
        return Landing(LANDED, f"{what}; rank raised {_clip(text)}; then {describe_failure(f)}",
                       self.budget, f.get("seq"))


class CollectiveHang(Fault):
    """One rank stalls; its peers hang in a collective until its timeout ends the group."""

    kind = "collective_hang"
    echoes = classmethod(lambda cls, spec: {} if spec.duration_s is None else {"stall_s": spec.duration_s})
    Spec = CollectiveHangSpec
    refused_on = {"torchrun": "is Ray Train-only for now (hang_worker stalls a torchrun rank)"}
    runs_in = "worker"
    causes = "worker_group"
    explore_rank = 12

    @classmethod
    def failure_claim(cls, spec: Any) -> FailureClaim:
        """A stall with a `duration_s` may end before the collective's timeout."""
        return FailureClaim(cls.causes, MAYBE if spec.duration_s else CERTAIN)

    @classmethod
    def cpu_problem(cls, spec, why_cpu: str, index: int) -> Optional[str]:
        if not spec.hang_detector:
            return None
        return (f"faults[{index}].hang_detector: Ray's NCCL hang detector needs NCCL (GPU workers), but this "
                f"scenario trains on CPU ({why_cpu}); drop hang_detector (gloo's timeout ends the hang)")

    @classmethod
    def scenario_problem(cls, spec, scenario, index: int) -> Optional[str]:
        w = scenario.workload
        if w.runtime != "ray_train":
            return None
        if w.collective_timeout_s is None:
            return (f"workload.collective_timeout_s: faults[{index}] collective_hang is ended by the "
                    f"collective timeout; set it (e.g. 10), else the peers wait Ray's 30 minutes")
        if w.trainer != "torch":
            return (f"faults[{index}].kind: collective_hang needs a torch process group; trainer "
                    f"{w.trainer} has none (allowed with trainer: torch)")
        if w.min_workers < 2:
            return (f"faults[{index}].kind: collective_hang needs a peer to block in the collective; "
                    f"workload.num_workers must be 2 or more")
        return None

    @classmethod
    def release_problem(cls, spec, ray_version: str, minor, index: int) -> Optional[str]:
        if spec.hang_detector and tuple(minor) < (2, 60):
            return (f"faults[{index}].hang_detector: Ray Train's NCCL hang detector arrived in Ray 2.60; "
                    f"Ray {ray_version} has none (drop it: the collective timeout ends the hang)")
        return None

    @classmethod
    def worker_plan(cls, spec, scenario) -> Dict[str, Any]:
        """Recorded with the stall: what the landing times the peers by."""
        return {"collective_timeout_s": scenario.workload.collective_timeout_s}

    @classmethod
    def hit_in_worker(cls, plan, worker) -> Dict[str, Any]:
        return {"device": worker.device, "stall_s": plan.get("duration_s"),
                "collective_timeout_s": plan.get("collective_timeout_s")}

    @classmethod
    def act_in_worker(cls, plan, worker, where: str, step: Optional[int]) -> None:
        worker.stall(plan.get("duration_s"))
    #: the peers' collective timeout runs after the stall (the scenario's collective_timeout_s)
    settle_s = 120.0

    def inject(self, ctx: FaultContext) -> Dict[str, Any]:
        raise FaultSkipped("collective_hang is done by the worker itself (ftharness.harness.job.instrument)")

    def landing(self, view: FaultView) -> Landing:
        hit = view.hit
        t_stall = float((view.injected or {}).get("t_done") or 0)
        what = (f"collective_hang stalled rank {hit.get('rank')} ({hit.get('device', '?')}) before step "
                f"{hit.get('step')} at seq {view.seq}")
        after = view.failures_after(view.seq)
        if not after:
            return Landing(PENDING, f"{what}; no failure decision followed")
        f = after[0]
        peer = next((e for e in view.events if e.get("kind") == "worker_error"
                     and view.seq < (e.get("seq") or 0) < (f.get("seq") or 0)
                     and e.get("pid") != hit.get("pid")
                     and COLLECTIVE_TIMEOUT.search(f"{e.get('error_type')}: {e.get('error')}")), None)
        if peer is not None:
            waited = float(peer.get("t") or 0) - t_stall
            ended = (f"rank {peer.get('rank')} raised {peer.get('error_type')} in the collective {waited:.1f} s "
                     f"after the stall ({_clip(str(peer.get('error')))})")
        elif COLLECTIVE_TIMEOUT.search(f"{f.get('error_type')}: {f.get('error')}"):
            ended = f"the failure names it ({_clip(str(f.get('error_type')) + ': ' + str(f.get('error')))})"
        elif self._peer_died_on_timeout(view, f, t_stall) is not None:
            ended = self._peer_died_on_timeout(view, f, t_stall)
        else:
            return Landing(MISSED, f"{what}; {describe_failure(f)} followed, but neither a peer's error nor the "
                                   f"failure shows a collective timing out or the hang detector")
        return Landing(LANDED, f"{what}; {ended}; then {describe_failure(f)}", self.budget, f.get("seq"))


    @staticmethod
    def _peer_died_on_timeout(view: FaultView, failure: Dict[str, Any], t_stall: float) -> Optional[str]:
        """NCCL's watchdog ends a process whose collective timed out (TORCH_NCCL_ASYNC_ERROR_HANDLING's
        default), so no Python error is recorded: evidence is then a peer rank's failure the
        controller saw no sooner than the collective timeout after the stall."""
        hit = view.hit
        timeout = hit.get("collective_timeout_s")
        if timeout is None:
            return None
        for e in view.events:
            if e.get("kind") != "controller_state" or not (view.seq < (e.get("seq") or 0) <= (failure.get("seq") or 0)):
                continue
            peers = [r for r in (e.get("worker_failures") or {}) if str(r) != str(hit.get("rank"))]
            waited = float(e.get("t") or 0) - t_stall
            if peers and waited >= 0.9 * float(timeout):
                what = ", ".join(f"rank {r} ({(e.get('worker_failures') or {})[r]})" for r in peers)
                return (f"{what} failed {waited:.1f} s after the stall, past the {float(timeout):g} s collective "
                        f"timeout (NCCL's watchdog ends the process)")
        return None


def _clip(text: str, n: int = 160) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 3] + "..."


def detector_env(specs: Iterable[Any]) -> Dict[str, str]:
    """The environment that turns on Ray 2.60's NCCL RAS hang detector for the run's
    collective_hang faults (spec models) that ask for it (action `fail`: it raises NCCLHangError)."""
    asked = [s for s in specs if s.kind == CollectiveHang.kind and s.hang_detector]
    if not asked:
        return {}
    env = {"RAY_TRAIN_ENABLE_NCCL_HANG_DETECTOR": "1", "RAY_TRAIN_NCCL_RAS_ACTION": "fail"}
    confirm = min((s.detector_confirm_s for s in asked if s.detector_confirm_s), default=None)
    if confirm is not None:
        env["RAY_TRAIN_NCCL_RAS_CONFIRM_DURATION_S"] = f"{confirm:g}"
        env["RAY_TRAIN_NCCL_RAS_MIN_POLL_INTERVAL_S"] = f"{max(1.0, min(15.0, confirm / 4)):g}"
    return env
