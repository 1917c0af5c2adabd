"""Worker-side instrumentation that wraps any Ray Train `train_loop_per_worker`.

`instrument(train_fn, book)` returns a function with the same signature for
TorchTrainer. On each worker it records: the start (which checkpoint was
restored and at which lineage step), every `ray.train.report` (however the user
imported it) with the checkpoint it persisted, steps, and the end or the error.

Steps. A user job's step is one `ray.train.report` call; step N is the N-th
report of the run's lineage (restores resume the count from the checkpoint).
A workload that knows its own steps (the reference workload) calls
`step_done(...)` instead, and reports then carry the current step.

The lineage step travels in the checkpoint itself: before a checkpoint is
reported, a small `.ftharness.json` is written into its directory, so a restore
knows its step even across `fit()` calls and with no history at hand. The
report's metrics also get an `ftharness_step` key, which the controller callback
reads when it registers the checkpoint.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import shutil
import tempfile
import time
import traceback
from typing import Any, Callable, Dict, List, Optional, Tuple

import ray
from pyarrow.fs import LocalFileSystem

from ftharness.harness.cluster import ray_private as rp
from ftharness.history.records import is_marker, marker_name
from ftharness.harness.cluster.history_service import Emitter
from ftharness.harness.job import device as devices
from ftharness.harness.job.digests import digest_of, file_hashes, restore_check
from ftharness.harness.job.rows import RecordedShard
from ftharness.harness.job.steps import StepRecorder
from ftharness.faults import REGISTRY

_current: Optional["WorkerRecorder"] = None


def current() -> Optional["WorkerRecorder"]:
    """The recorder of this worker process, or None outside an instrumented run."""
    return _current


def _set_current(rec: Optional["WorkerRecorder"]) -> None:
    # A module-level setter: the wrapper below is pickled by value, so a
    # `global` statement inside it would rebind a copy of this module's globals.
    global _current
    _current = rec


def step_done(step: int, rows: Optional[List[int]] = None, **fields: Any) -> None:
    """Record that `step` (1-based lineage step) finished on this rank."""
    if _current is not None:
        _current.step_done(step, rows=rows, **fields)


def step_begin(step: int) -> None:
    """The workload is about to compute `step` (1-based); a crash point."""
    if _current is not None:
        _current.crash_point("before_step", step)


def checkpoint_written(step: int, local_path: str) -> None:
    if _current is not None:
        _current.emit("checkpoint_written", step=step, local_path=local_path)
        _current.crash_point("after_checkpoint_write", step)


def read_markers(checkpoint) -> List[Dict[str, Any]]:
    """The ftharness markers inside a checkpoint (one per rank that reported it)."""
    if checkpoint is None:
        return []
    out = []
    try:
        import pyarrow.fs

        fs = checkpoint.filesystem
        for info in fs.get_file_info(pyarrow.fs.FileSelector(checkpoint.path)):
            if is_marker(os.path.basename(info.path)):
                with fs.open_input_stream(info.path) as f:
                    out.append(json.loads(f.read().decode()))
    except Exception:
        return out
    return out


def restored_files(checkpoint, markers: List[Dict[str, Any]]) -> Tuple[Optional[bool], Optional[Dict[str, str]]]:
    """`restored_intact` and `restored_digests` of a restored checkpoint
    (harness.job.digests.restore_check); (None, None) when nothing was hashed or
    the files cannot be read."""
    if not markers:
        return None, None
    try:
        if isinstance(checkpoint.filesystem, LocalFileSystem):
            return restore_check(checkpoint.path, markers)
        # a folder of this process's own: as_directory's temporary folder is shared by every
        # process on the host that opens the same checkpoint (the other ranks, the job's own
        # restore), and the last one out removes it, also under a rank still reading it
        # (seen on the catalog's storage-errors run: one rank's digests unread, its restore
        # INCONCLUSIVE). A shared folder removed by this check could fail the job's restore.
        d = tempfile.mkdtemp(prefix="ftharness-restore-check-")
        try:
            return restore_check(checkpoint.to_directory(d), markers)
        finally:
            shutil.rmtree(d, ignore_errors=True)
    except Exception:
        return None, None


def restored_intact(checkpoint, markers: List[Dict[str, Any]]) -> Optional[bool]:
    """Whether every file each rank reported is in the restored checkpoint with
    the content it had; None when nothing was hashed or the files cannot be read."""
    return restored_files(checkpoint, markers)[0]


def checkpoint_name(checkpoint) -> Optional[str]:
    if checkpoint is None:
        return None
    return checkpoint.path.rstrip("/").split("/")[-1]


class WorkerRecorder(StepRecorder):
    """Per-worker state: identity, attempt, lineage step; emits durably."""

    def __init__(self, book, explicit_steps: bool, crash_plans: Optional[List[Dict[str, Any]]] = None,
                 row_id: Optional[str] = None, row_datasets: Optional[List[str]] = None):
        self.row_id = row_id            # the column of row ids a user job's datasets carry (workload.row_id)
        self.row_datasets = row_datasets   # the datasets whose rows are recorded (split among workers); None: all
        self.shards: set = set()        # the datasets this worker asked get_dataset_shard for
        self.rows: List[Any] = []       # ids read since the last report, and the pass they were read in
        self.epoch = -1
        ctx = ray.train.get_context()
        self.rank = ctx.get_world_rank()
        self.world_size = ctx.get_world_size()
        self.pid = os.getpid()
        self.node_id = ray.get_runtime_context().get_node_id()
        self.explicit_steps = explicit_steps
        self.crash_plans = [p for p in (crash_plans or []) if p["rank"] == self.rank]
        self.device = devices.ray_train_device()
        self.step = 0
        self._emitter = Emitter(book, "worker")
        joined = self._emitter.handle().join.remote(self.pid)
        info = ray.get(joined, timeout=60)
        self.attempt = info.get("attempt", 0)
        self.attempt_id = info.get("attempt_id")
        self._emitter.base = {
            "fit_index": info.get("fit_index"),
            "attempt": self.attempt,
            "attempt_id": self.attempt_id,
            "rank": self.rank,
            "world_size": self.world_size,
            "node_id": self.node_id,
            "pid": self.pid,
        }

    def emit(self, kind: str, **fields: Any) -> None:
        self._emitter.emit(kind, **fields)

    # -- what a fault that runs in the worker may use here (faults/base.py: WorkerSide)
    def raise_cuda_error(self, how: str) -> None:
        devices.raise_cuda_error(self.device, how)

    def stall(self, duration_s: Optional[float]) -> None:
        devices.stall(duration_s)

    def crash_point(self, where: str, step: Optional[int]) -> None:
        """Do the in-worker fault that aims at this rank, point and step, as its kind says
        (`act_in_worker`: crash_worker raises ChaosCrash, cuda_error a real CUDA error,
        collective_hang stalls this thread; faults/process.py, faults/gpu.py)."""
        for plan in self.crash_plans:
            if plan["where"] != where or (where != "on_restore" and plan["step"] != step):
                continue
            if where == "on_restore" and plan["step"] is not None and plan["step"] != step:
                continue
            if not ray.get(self._emitter.handle().claim.remote(plan["fault"], plan.get("nth") or 1), timeout=30):
                continue
            kind = plan["kind"]
            fault = REGISTRY[kind]
            hit = {"rank": self.rank, "pid": self.pid, "node_id": self.node_id, "where": where, "step": step}
            hit.update(fault.hit_in_worker(plan, self))
            now = time.time()
            self._emitter.emit("fault_injected", source="injector", fault=plan["fault"],
                               fault_kind=kind, target_asked=plan["target_asked"],
                               target_hit={k: v for k, v in hit.items() if v is not None},
                               t_requested=now, t_done=now)
            fault.act_in_worker(plan, self, where, step)   # raises, or (a stall) returns and training goes on


    # -- report observation
    def before_report(self, metrics: Dict[str, Any], checkpoint) -> None:
        if not self.explicit_steps:
            self.crash_point("before_step", self.step + 1)
            self.step += 1
            if checkpoint is not None:
                self.crash_point("after_checkpoint_write", self.step)
        self.crash_point("before_report", self.step)
        if isinstance(metrics, dict):
            metrics["ftharness_step"] = self.step
        self._digest = None
        if checkpoint is not None:
            try:
                hashes = file_hashes(checkpoint.path)
                self._digest = digest_of(hashes)
                with open(os.path.join(checkpoint.path, marker_name(self.rank)), "w") as f:
                    json.dump({"step": self.step, "attempt": self.attempt, "rank": self.rank,
                               "digest": self._digest, "files": hashes}, f)
            except Exception:
                pass  # a remote or read-only checkpoint: the metrics still carry the step

    def after_report(self, metrics: Dict[str, Any], checkpoint) -> None:
        persisted = None
        if checkpoint is not None:
            try:
                persisted = checkpoint_name(rp.train_fn_utils().get_checkpoint())
            except Exception:
                persisted = None
        self.emit("report", step=self.step, checkpoint=persisted, digest=getattr(self, "_digest", None),
                  metrics={k: v for k, v in (metrics or {}).items() if _jsonable(v)})
        if not self.explicit_steps:
            rows = {}
            if self.row_id is not None:   # recorded even when empty: this step read no row
                rows = {"rows": self.rows, "epoch": self.epoch if self.epoch >= 0 else None}
                self.rows = []
            self.emit("step", step=self.step, **rows)
            self.crash_point("after_step", self.step)

    def on_dataset_shard(self, shard: Any, name: Optional[str]) -> Any:
        """A `get_dataset_shard(name)` of the job: noted once per dataset (a `dataset_shard`
        event, so a verdict can tell the job read Ray Data); with `row_id`, the shard of a
        dataset split among the workers is wrapped so its row ids are recorded (ftharness.harness.job.rows).
        A dataset the DataConfig does not split is read whole by every rank: not recorded."""
        if shard is None:
            return shard
        recorded = self.row_id is not None and (name is None or self.row_datasets is None
                                                or name in self.row_datasets)
        if name not in self.shards:
            self.shards.add(name)
            self.emit("dataset_shard", dataset=name, row_id=self.row_id if recorded else None)
        return RecordedShard(shard, self.row_id, self.new_pass, self.consume) if recorded else shard

    def new_pass(self) -> int:
        """A new pass over a dataset shard: the job's next epoch."""
        self.epoch += 1
        return self.epoch

    def consume(self, ids: List[Any], epoch: int) -> None:
        self.rows.extend(ids)


def _jsonable(v: Any) -> bool:
    return isinstance(v, (int, float, str, bool)) or v is None


def _small_plain(value, limit: int = 20000) -> bool:
    """Whether `value` is JSON data of at most `limit` characters."""
    import json

    try:
        return value is not None and len(json.dumps(value)) <= limit
    except (TypeError, ValueError):
        return False


def instrument(train_fn: Callable, book, explicit_steps: bool = False,
               crash_plans: Optional[List[Dict[str, Any]]] = None, hold_s: Optional[float] = None,
               row_id: Optional[str] = None, row_datasets: Optional[List[str]] = None) -> Callable:
    """Wrap a train_loop_per_worker so that everything it does is recorded.

    With `hold_s`, a train function that returns waits (up to `hold_s`) until
    the injector says every fault has resolved: the landing hold, so a run
    cannot finish before its faults took effect. With `row_id`, the rows of the
    datasets in `row_datasets` (None: every dataset) read through
    `get_dataset_shard` are recorded on the steps."""
    takes_config = len(inspect.signature(train_fn).parameters) > 0

    @functools.wraps(train_fn)
    def wrapped(config: Optional[Dict[str, Any]] = None):
        rec = WorkerRecorder(book, explicit_steps, crash_plans, row_id=row_id, row_datasets=row_datasets)
        _set_current(rec)
        restored = ray.train.get_checkpoint()
        markers = read_markers(restored)
        rec.step = max((int(m["step"]) for m in markers if "step" in m), default=0)
        intact, digests = restored_files(restored, markers)
        pg = devices.pg_warmup(rec.device)   # NCCL's communicator is made here (gloo's at init, by Ray)
        rec.emit(
            "worker_start",
            restored_checkpoint=checkpoint_name(restored),
            restored_step=rec.step if restored is not None else None,
            restored_intact=intact,
            **({"restored_digests": digests} if digests else {}),
            device=rec.device,
            **({"gpu": devices.gpu_facts(rec.device)} if rec.device != devices.CPU else {}),
            **({"pg": pg} if pg is not None else {}),
        )
        undo = rp.wrap_train_fn_utils(   # a user job's get_dataset_shard is noted (and its rows recorded)
            rec.before_report, rec.after_report,
            rec.on_dataset_shard if (row_id is not None or not explicit_steps) else None)
        try:
            if restored is not None:
                rec.crash_point("on_restore", rec.step)
            out = train_fn(config) if takes_config else train_fn()
        except BaseException as e:  # noqa: BLE001 - recorded, then re-raised unchanged
            rec.emit("worker_error", error_type=type(e).__name__, error=str(e)[:500],
                     traceback=traceback.format_exc()[-2000:], step=rec.step)
            raise
        finally:
            undo()
            _set_current(None)
        held = None
        if hold_s:
            t = time.time()
            try:
                how = ray.get(rec._emitter.handle().hold.remote(rec.pid, hold_s), timeout=hold_s + 30)
            except Exception as e:  # noqa: BLE001 - the history is gone: nothing to wait for
                how = f"error: {type(e).__name__}"
            held = {"held_s": round(time.time() - t, 3), "hold": how}
        # rank 0's return value, as Result.return_value carries it from 2.56 on: the history
        # keeps it for every release (small plain data only)
        ret = {"return_value": out} if rec.rank == 0 and _small_plain(out) else {}
        rec.emit("worker_end", step=rec.step, **ret, **(held or {}), **devices.peak_facts(rec.device))
        return out

    if not takes_config:
        # TorchTrainer inspects the signature to decide whether to pass config.
        wrapped.__signature__ = inspect.Signature(
            [inspect.Parameter("config", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None)]
        )
    return wrapped
