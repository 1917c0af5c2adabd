"""The Ray-free worker of a torchrun run: `python -m ftharness.harness.torchrun.worker SPEC`.

TorchElastic starts it with RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR/PORT and
TORCHELASTIC_RESTART_COUNT in its environment; the launcher adds the collector's
address and the node, and the agent the rendezvous round (`FTHARNESS_ATTEMPT_ID`).
It joins a process group (NCCL on its GPU when the spec says `use_gpu`: cuda:LOCAL_RANK, or
cuda:RANK when every agent shares this host; gloo on CPU; ftharness.harness.job.device),
restores the newest committed checkpoint of the
run (ftharness.harness.torchrun.storage), and runs the reference loop of
ftharness.harness.job.workload (`run_loop`) with `TorchrunSide`: the same steps, rows,
accumulators, markers and digests as under Ray, recorded as the same events
(worker_start, step, checkpoint_written, checkpoint_registered, report,
worker_end / worker_error). crash_worker plans raise ChaosCrash here, as
ftharness.harness.job.instrument does under Ray.
"""

from __future__ import annotations

import datetime
import io
import json
import os
import sys
import time
import traceback
from typing import Any, Dict, List, Optional

from ftharness.errors import ChaosCrash
from ftharness.history.records import marker_name
from ftharness.harness.job.digests import digest_of, file_hashes, restore_check
from ftharness.harness.job.steps import StepRecorder
from ftharness.harness.torchrun import storage
from ftharness.harness.torchrun.client import CollectorClient, TcpEmitter
from ftharness.harness.torchrun.orphans import die_with_parent

ENV_ATTEMPT = "FTHARNESS_ATTEMPT_ID"   # the rendezvous round, set by ftharness.harness.torchrun.agent
ENV_NODE_ID = "FTHARNESS_NODE_ID"      # the node (agent) this worker runs on, set by the launcher
ENV_AGENT_PID = "FTHARNESS_AGENT_PID"  # who must be this worker's parent


class Recorder(StepRecorder):
    """This worker's identity, attempt and lineage step; emits its events."""

    def __init__(self, client: CollectorClient, spec: Dict[str, Any]):
        self.client = client
        self.rank = int(os.environ["RANK"])
        self.world_size = int(os.environ["WORLD_SIZE"])
        self.pid = os.getpid()
        self.node_id = os.environ.get(ENV_NODE_ID)
        self.attempt_id = os.environ.get(ENV_ATTEMPT)
        self.crash_plans = [p for p in spec.get("crash_plans") or [] if p["rank"] == self.rank]
        self.step = 0
        try:
            self.attempt = int(client.call("attempt_of", self.attempt_id)) if self.attempt_id else 0
        except Exception:  # noqa: BLE001 - the model falls back on the attempt id
            self.attempt = 0
        self.emitter = TcpEmitter(client, spec["run_name"], "worker", base={
            "fit_index": 1, "attempt": self.attempt, "attempt_id": self.attempt_id, "rank": self.rank,
            "world_size": self.world_size, "node_id": self.node_id, "pid": self.pid,
            "restart_count": int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")),
        })

    def emit(self, kind: str, **fields: Any) -> None:
        self.emitter.emit(kind, **fields)

    def crash_point(self, where: str, step: Optional[int]) -> None:
        """Raise ChaosCrash if a crash_worker fault aims at this rank, point and step."""
        for plan in self.crash_plans:
            if plan["where"] != where or (where != "on_restore" and plan["step"] != step):
                continue
            if where == "on_restore" and plan["step"] is not None and plan["step"] != step:
                continue
            try:
                claimed = self.client.call("claim", plan["fault"], plan.get("nth") or 1)
            except Exception:  # noqa: BLE001 - no history, no fault
                claimed = False
            if not claimed:
                continue
            now = time.time()
            self.emitter.emit("fault_injected", source="injector", fault=plan["fault"], fault_kind=plan["kind"],
                              target_asked=plan["target_asked"],
                              target_hit={"rank": self.rank, "pid": self.pid, "node_id": self.node_id,
                                          "where": where, "step": step},
                              t_requested=now, t_done=now)
            raise ChaosCrash(f"ftharness crash_worker fault {plan['fault']}: rank {self.rank} {where} step {step}")



class TorchrunSide:
    """ftharness.harness.job.workload's runtime side under TorchElastic (see RayTrainSide there)."""

    def __init__(self, rec: Recorder, spec: Dict[str, Any], restored: Optional[str], device: str = "cpu"):
        import torch

        self.rec = rec
        self.rank, self.world_size = rec.rank, rec.world_size
        self.device = torch.device(device)
        self.run_dir = spec["run_dir"]
        self.num_to_keep = spec.get("num_to_keep")
        self.restored = restored
        self.fs = storage_filesystem(spec)

    def restore(self) -> Optional[Dict[str, Any]]:
        if self.restored is None:
            return None
        from ftharness.harness.job.device import load_state

        data = storage.read_file(os.path.join(self.run_dir, self.restored, "state.pt"), self.fs)
        return load_state(io.BytesIO(data), str(self.device))

    def prepare_model(self, model):
        """DDP (over NCCL on this rank's GPU, or gloo), as Ray Train's prepare_model does for
        more than one worker."""
        model = model.to(self.device)
        if self.world_size > 1:
            from torch.nn.parallel import DistributedDataParallel

            if self.device.type == "cuda":
                return DistributedDataParallel(model, device_ids=[self.device.index])
            return DistributedDataParallel(model)
        return model

    def report(self, metrics: Dict[str, Any], directory: Optional[str]) -> None:
        """Rank 0 commits its checkpoint (markers and digests as under Ray); every rank records its report."""
        rec = self.rec
        rec.crash_point("before_report", rec.step)
        metrics["ftharness_step"] = rec.step
        name, digest = None, None
        if directory is not None:
            hashes = file_hashes(directory)
            digest = digest_of(hashes)
            with open(os.path.join(directory, marker_name(rec.rank)), "w") as f:
                json.dump({"step": rec.step, "attempt": rec.attempt, "rank": rec.rank, "digest": digest,
                           "files": hashes}, f)
            name = storage.commit(self.run_dir, directory, self.fs)
            rec.emit("checkpoint_registered", checkpoint=name, path=os.path.join(self.run_dir, name),
                     step=rec.step, how="committed by rename")
            storage.prune(self.run_dir, self.num_to_keep, self.fs)
        rec.emit("report", step=rec.step, checkpoint=name, digest=digest,
                 metrics={k: v for k, v in metrics.items() if isinstance(v, (int, float, str, bool)) or v is None})

    def dataset_shard(self, name: str):
        raise RuntimeError("workload.data: ray_data needs Ray (refused for torchrun by the schema)")

    def preemption_info(self):
        return None   # TorchElastic gives no preemption notice

    def preemption_notice(self, step: int, deadline_ms: Any) -> None:
        pass

    def step_begin(self, step: int) -> None:
        self.rec.crash_point("before_step", step)

    def step_done(self, step: int, rows=None, **fields: Any) -> None:
        self.rec.step_done(step, rows=rows, **fields)

    def checkpoint_written(self, step: int, local_path: str) -> None:
        self.rec.emit("checkpoint_written", step=step, local_path=local_path)
        self.rec.crash_point("after_checkpoint_write", step)


_FS: Dict[Optional[str], Any] = {}


def storage_filesystem(spec: Dict[str, Any]):
    """The pyarrow filesystem the job's checkpoint operations go through: local disk, or with a
    storage_errors fault in the scenario, ftharness.faults.storage's chaos filesystem over it (its control
    file in the storage root), one per process. The harness's own markers and digests are read
    past it, as under Ray, where they are read from the checkpoint Ray Train downloaded."""
    root = spec.get("storage_chaos_root")
    if root not in _FS:
        if root:
            from ftharness.faults.storage import chaos_filesystem

            _FS[root] = chaos_filesystem(root)
        else:
            _FS[root] = storage.local_fs()
    return _FS[root]


def run(spec: Dict[str, Any]) -> Dict[str, Any]:
    """One worker's life: process group, restore, the loop, the landing hold."""
    import torch.distributed as dist

    from ftharness.harness.job import device as devices
    from ftharness.harness.job.workload import run_loop

    client = CollectorClient()
    rec = Recorder(client, spec)
    device = devices.CPU
    if spec.get("use_gpu"):
        index = devices.torchrun_index(int(os.environ.get("LOCAL_RANK", "0")), rec.rank, spec.get("gpu_by") == "rank")
        device = devices.choose_device(True, index, devices.CudaInfo.probe())
    if device != devices.CPU:
        import torch

        torch.cuda.set_device(torch.device(device))
    t = time.perf_counter()
    dist.init_process_group(devices.backend_for(device),
                            timeout=datetime.timedelta(seconds=float(spec.get("pg_timeout_s", 120))))
    pg = devices.pg_warmup(device, init_s=time.perf_counter() - t)
    restored = storage.latest(spec["run_dir"], storage_filesystem(spec))   # the job's listing (storage_errors apply)
    markers = storage.read_markers(os.path.join(spec["run_dir"], restored)) if restored else []
    rec.step = max((int(m["step"]) for m in markers if "step" in m), default=0)
    intact, digests = restore_check(os.path.join(spec["run_dir"], restored), markers) if markers else (None, None)
    rec.emit("worker_start", restored_checkpoint=restored,
             restored_step=rec.step if restored is not None else None,
             restored_intact=intact, **({"restored_digests": digests} if digests else {}),
             device=device, **({"gpu": devices.gpu_facts(device)} if device != devices.CPU else {}),
             **({"pg": pg} if pg is not None else {}))
    try:
        if restored is not None:
            rec.crash_point("on_restore", rec.step)
        out = run_loop(spec["workload"], TorchrunSide(rec, spec, restored, device))
    except BaseException as e:  # noqa: BLE001 - recorded, then re-raised unchanged
        rec.emit("worker_error", error_type=type(e).__name__, error=str(e)[:500],
                 traceback=traceback.format_exc()[-2000:], step=rec.step)
        raise
    held = {}
    if spec.get("hold_s"):
        t = time.time()
        try:
            how = client.call("hold", rec.pid, float(spec["hold_s"]), timeout_s=float(spec["hold_s"]) + 30)
        except Exception as e:  # noqa: BLE001 - the history is gone: nothing to wait for
            how = f"error: {type(e).__name__}"
        held = {"held_s": round(time.time() - t, 3), "hold": how}
    t = time.perf_counter()
    dist.destroy_process_group()
    rec.emit("worker_end", step=rec.step, return_value=out if rec.rank == 0 else None, **held,
             pg_teardown_s=round(time.perf_counter() - t, 4), **devices.peak_facts(device))
    client.close()
    return out


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    agent = os.environ.get(ENV_AGENT_PID)
    die_with_parent(int(agent) if agent else None)
    with open(argv[0]) as f:
        spec = json.load(f)
    from torch.distributed.elastic.multiprocessing.errors import record

    record(run)(spec)   # an error file for the agent's failure summary, as torchrun jobs do
    return 0


if __name__ == "__main__":
    sys.exit(main())
