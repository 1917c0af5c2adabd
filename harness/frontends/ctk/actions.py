"""Chaos Toolkit actions: every ftharness fault kind, injected now into the run
the `ftharness.harness.frontends.ctk.control` control started. Arguments are the fault's own
(docs/chaostoolkit.md's table); each returns what the history recorded for it.

    {"type": "action", "name": "preempt-a-node",
     "provider": {"type": "python", "module": "ftharness.harness.frontends.ctk.actions", "func": "preempt_node",
                  "arguments": {"target": {"rank": 1}, "notice_s": 3, "replace": true}}}

Every fault kind has an action, with every argument and mode of its spec
(`partition_node` mode pause or network, direction, cut_from; `network_degrade`
loss, rate, latency and direction). `crash_worker` raises inside the train
function, so it must be armed before training starts: the control
(ftharness.harness.frontends.ctk.control) adds each crash_worker action of the
experiment to its scenario's faults before the run starts, and the action
itself, when the method reaches it, reports what the history recorded of it.

The list of actions is the fault registry's (ftharness.faults): a kind without a function
written below (a plugin's, docs/plugins.md) gets one made from its spec model, named after
the kind, whose keyword arguments are the spec's; the kinds that `runs_in` the worker are
armed before training whatever their action looks like.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Dict, List, Optional

from ftharness.faults import FAULT_KINDS, IN_WORKER, REGISTRY
from ftharness.faults.checkpoint import CorruptCheckpoint
from ftharness.faults.controller import KillController
from ftharness.faults.gpu import CollectiveHang, CudaError
from ftharness.faults.network import NetworkDegrade
from ftharness.faults.node import KillNode, PartitionNode, PreemptNode
from ftharness.faults.process import CrashWorker, HangWorker, KillWorker
from ftharness.faults.resources import StarveResources
from ftharness.faults.storage import StorageErrors
from ftharness.harness.frontends.ctk.session import current

#: one action per fault kind of the registry, in its order, and the rollback
__all__ = list(FAULT_KINDS) + ["heal_all"]
#: actions armed before training (the control moves them into the scenario's faults): the
#: kinds the worker does itself (Fault.runs_in == "worker")
ARMED_BEFORE_TRAINING = IN_WORKER

Target = Dict[str, Any]


def _inject(kind: str, **arguments: Any) -> Dict[str, Any]:
    return current().inject(kind, arguments)


def kill_worker(target: Target, graceful: bool = False) -> Dict[str, Any]:
    """SIGKILL a training worker's process (or ray.kill it with graceful)."""
    return _inject(KillWorker.kind, target=target, graceful=graceful or None)


def crash_worker(target: Target, at: Optional[Dict[str, Any]] = None, where: str = "before_step") -> Dict[str, Any]:
    """The train function of the target rank raises ChaosCrash at `where`
    (before_step, after_step, after_checkpoint_write, before_report, on_restore)
    when `at` ({step: N}) is reached. Armed by the control before training;
    returns the history's record of it so far ({"armed": true, "events": [...]})."""
    session = current()
    records = [e for e in session.events() if e.get("fault_kind") == CrashWorker.kind
               and e.get("kind") in ("fault_injected", "fault_skipped", "worker_error")]
    return {"armed": True, "target": target, "at": at, "where": where, "events": records}


def _armed(kind: str, **arguments: Any) -> Dict[str, Any]:
    """What the history recorded so far of an action armed before training."""
    records = [e for e in current().events() if e.get("fault_kind") == kind
               and e.get("kind") in ("fault_injected", "fault_skipped", "worker_error")]
    return {"armed": True, **arguments, "events": records}


def cuda_error(target: Target, at: Optional[Dict[str, Any]] = None, how: str = "device_assert") -> Dict[str, Any]:
    """A real CUDA error on the target rank's GPU before step `at` ({step: N}); how:
    device_assert or invalid_device (faults/gpu.py). Armed by the control before training."""
    return _armed(CudaError.kind, target=target, at=at, how=how)


def collective_hang(target: Target, at: Optional[Dict[str, Any]] = None, duration_s: Optional[float] = None,
                    hang_detector: Optional[bool] = None, detector_confirm_s: Optional[float] = None) -> Dict[str, Any]:
    """The target rank stalls before step `at` while its peers block in the all-reduce until the
    collective timeout (faults/gpu.py). Armed by the control before training."""
    return _armed(CollectiveHang.kind, target=target, at=at, duration_s=duration_s, hang_detector=hang_detector,
                  detector_confirm_s=detector_confirm_s)


def hang_worker(target: Target, duration_s: Optional[float] = None) -> Dict[str, Any]:
    """SIGSTOP a training worker; resumed after duration_s or by heal_all."""
    return _inject(HangWorker.kind, target=target, duration_s=duration_s)


def kill_node(target: Target, replace: bool = False, replace_after_s: float = 0.0,
              graceful: bool = False) -> Dict[str, Any]:
    """A node dies without notice; optionally a replacement joins."""
    return _inject(KillNode.kind, target=target, replace=replace, replace_after_s=replace_after_s,
                   graceful=graceful or None)


def preempt_node(target: Target, notice_s: float = 3.0, kill_offset_s: float = 0.0,
                 replace: bool = False, replace_after_s: float = 0.0) -> Dict[str, Any]:
    """Spot preemption: drain with a deadline, the node dies at it; returns after the kill."""
    return _inject(PreemptNode.kind, target=target, notice_s=notice_s, kill_offset_s=kill_offset_s,
                   replace=replace, replace_after_s=replace_after_s)


def partition_node(target: Target, duration_s: float = 10.0, mode: str = "pause",
                   direction: Optional[str] = None, cut_from: Optional[str] = None) -> Dict[str, Any]:
    """Cut a node off for duration_s: `pause` stops every process of it (SIGSTOP);
    `network` drops its packets (cluster.network: namespaces), `direction` in, out
    or both, `cut_from` all, head or workers."""
    return _inject(PartitionNode.kind, target=target, duration_s=duration_s, mode=mode, direction=direction,
                   cut_from=cut_from)


def network_degrade(target: Target, loss_pct: Optional[float] = None, rate_mbit: Optional[float] = None,
                    latency_ms: Optional[float] = None, direction: Optional[str] = None,
                    duration_s: Optional[float] = None) -> Dict[str, Any]:
    """Degrade a node's link for duration_s (default 20): drop loss_pct % of
    packets, cap it at rate_mbit, delay latency_ms; direction in, out or both."""
    return _inject(NetworkDegrade.kind, target=target, loss_pct=loss_pct, rate_mbit=rate_mbit,
                   latency_ms=latency_ms, direction=direction, duration_s=duration_s)


def corrupt_checkpoint(which: str = "latest", how: str = "bitflip") -> Dict[str, Any]:
    """Damage a registered checkpoint (or the run's snapshot) in the run's storage."""
    return _inject(CorruptCheckpoint.kind, which=which, how=how)


def storage_errors(ops: Optional[List[str]] = None, path_glob: Optional[str] = None,
                   error_rate: float = 1.0, latency_s: float = 0.0,
                   duration_s: Optional[float] = None, partial: bool = False) -> Dict[str, Any]:
    """Make the run's storage fail or slow down (needs storage_errors in the control's scenario
    so the run uses the chaos filesystem); `partial` leaves a torn file behind a failing write."""
    return _inject(StorageErrors.kind, ops=ops, path_glob=path_glob, error_rate=error_rate,
                   latency_s=latency_s, duration_s=duration_s, partial=partial or None)


def starve_resources(duration_s: Optional[float] = None) -> Dict[str, Any]:
    """Take every free CPU so a restarted worker group cannot be scheduled."""
    return _inject(StarveResources.kind, duration_s=duration_s)


def kill_controller(resume: bool = True) -> Dict[str, Any]:
    """Kill the Train controller; with resume, fit() runs again as an operator would."""
    return _inject(KillController.kind, resume=resume)


def heal_all() -> List[int]:
    """Rollback: heal every fault still active (resume hung workers, free CPUs, storage)."""
    return current().heal_all()


def _made_action(kind: str) -> Callable[..., Dict[str, Any]]:
    """The action of a kind no function above is written for: its spec's arguments as keywords
    (None: the kind's default), injected now, or (a kind that runs in the worker) armed before
    training and reporting what the history recorded of it."""
    cls = REGISTRY[kind]
    names = ["target"] if "target" in cls.Spec.model_fields else []
    names += (["at"] if cls.runs_in == "worker" else []) + cls.Spec.arguments()

    def action(**arguments: Any) -> Dict[str, Any]:
        given = {k: v for k, v in arguments.items() if v is not None}
        return _armed(kind, **given) if kind in ARMED_BEFORE_TRAINING else _inject(kind, **given)

    action.__name__ = action.__qualname__ = kind
    action.__module__ = __name__
    action.__doc__ = (inspect.getdoc(cls) or inspect.getdoc(cls.Spec) or kind) + \
        f"\n\n(made from the {kind} spec of {cls.plugin or 'ftharness'}: arguments {', '.join(names) or 'none'})"
    action.__signature__ = inspect.Signature(
        [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Any) for n in names],
        return_annotation=Dict[str, Any])
    return action


for _kind in FAULT_KINDS:
    if not inspect.isfunction(globals().get(_kind)):
        globals()[_kind] = _made_action(_kind)
