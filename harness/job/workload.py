"""The reference workload: a real DDP job whose lost or duplicated work is exact.

A small MLP regresses a deterministic synthetic dataset whose rows carry ids.
Every step all-reduces, next to the gradients, float64 accumulators of the row
ids it consumed (count, sum of ids, sum of squared ids, sum of epoch-tagged ids);
the accumulators live in the checkpoint. Their values are integers well below
2**53, so the final state equals `expected_accumulators(config)` *exactly* when
every row of every epoch was applied once, and differs when a step was lost or
applied twice.

Data sources:
- `resumable`: the workload's own deterministic sampler. Step s of the lineage
  takes the global batch `perm(epoch)[i*B:(i+1)*B]` and splits it across the
  current ranks, so the position is just the step in the checkpoint and rows
  are consumed exactly once per epoch across restarts and world-size changes.
- `ray_data`: `ray.train.get_dataset_shard("train")` over a Ray Dataset of ids
  (Ray's streaming split). Ray 2.60 keeps no data position: after a restart the
  epoch is re-split and iterated from its start.

Devices: each rank trains on its runtime's device (`side.device`: Ray Train's
`get_device()`, cuda:N with one GPU per worker, or cpu; torchrun's from LOCAL_RANK).
Checkpoints hold CPU tensors and are restored with `map_location` onto that device
(ftharness.harness.job.device).
"""

from __future__ import annotations

import os
import tempfile
from typing import Any, Dict, Optional

import numpy as np

from ftharness.scenarios.reference_data import (ACC_FIELDS, WorkloadConfig, accumulate,  # noqa: F401
                                      global_batch, rank_slice)


HIDDEN = {"small": 32, "medium": 256, "large": 1024}


def dataset(cfg: WorkloadConfig):
    """(X, y) for all rows, identical on every worker (seeded)."""
    rng = np.random.default_rng(cfg.seed)
    x = rng.standard_normal((cfg.rows, cfg.features)).astype(np.float32)
    w = rng.standard_normal((cfg.features, 1)).astype(np.float32)
    y = x @ w + 0.01 * rng.standard_normal((cfg.rows, 1)).astype(np.float32)
    return x, y



# ----------------------------------------------------------------- train loop
def train_loop(config: Dict[str, Any]) -> Dict[str, Any]:
    """`train_loop_per_worker` of the reference workload (runs on every rank)."""
    return run_loop(config, RayTrainSide())


class RayTrainSide:
    """What the training loop needs from its runtime, on Ray Train V2: the rank
    and device from the train context, the checkpoint Ray hands back, DDP by
    `prepare_model`, `ray.train.report`, and the instrumentation's hooks.
    (ftharness.harness.torchrun.worker has the same methods for TorchElastic.)"""

    def __init__(self):
        import ray.train
        import ray.train.torch

        from ftharness.harness.job import instrument

        ctx = ray.train.get_context()
        self.rank, self.world_size = ctx.get_world_rank(), ctx.get_world_size()
        self.device = ray.train.torch.get_device()
        self._instrument = instrument

    def restore(self) -> Optional[Dict[str, Any]]:
        """The state a restart resumes from (None for a fresh start)."""
        import ray.train

        ckpt = ray.train.get_checkpoint()
        if ckpt is None:
            return None
        from ftharness.harness.job.device import load_state

        with ckpt.as_directory() as d:
            return load_state(os.path.join(d, "state.pt"), str(self.device))

    def prepare_model(self, model):
        import ray.train.torch

        return ray.train.torch.prepare_model(model)

    def report(self, metrics: Dict[str, Any], directory: Optional[str]) -> None:
        """Report metrics, and the checkpoint in `directory` (rank 0) or none."""
        import ray.train
        from ray.train import Checkpoint

        ray.train.report(metrics, checkpoint=Checkpoint.from_directory(directory) if directory else None)

    def dataset_shard(self, name: str):
        import ray.train

        return ray.train.get_dataset_shard(name)

    def preemption_info(self):
        import ray.train

        return ray.train.get_preemption_info()

    def step_begin(self, step: int) -> None:
        self._instrument.step_begin(step)

    def step_done(self, step: int, rows=None, **fields: Any) -> None:
        self._instrument.step_done(step, rows=rows, **fields)

    def checkpoint_written(self, step: int, local_path: str) -> None:
        self._instrument.checkpoint_written(step, local_path)

    def preemption_notice(self, step: int, deadline_ms: Any) -> None:
        if self._instrument.current() is not None:
            self._instrument.current().emit("preemption_notice", step=step, deadline_ms=deadline_ms)


def run_loop(config: Dict[str, Any], side) -> Dict[str, Any]:
    """The reference training loop on one rank, whatever runs it: `side` is the
    runtime (RayTrainSide here, ftharness.harness.torchrun.worker.TorchrunSide there), so
    both runtimes train, checkpoint and record the very same steps."""
    import torch
    import torch.distributed as dist

    from ftharness.harness.job.device import to_cpu

    cfg = WorkloadConfig(**config)
    rank, ws = side.rank, side.world_size
    device = side.device

    torch.manual_seed(cfg.seed)
    hidden = HIDDEN.get(cfg.model, 32)
    model = torch.nn.Sequential(
        torch.nn.Linear(cfg.features, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 1)
    ).to(device)   # on the rank's device before restoring, so the state loads onto it (map_location)
    optimizer = torch.optim.SGD(model.parameters(), lr=cfg.lr)
    step = 0
    acc = np.zeros(4, dtype=np.float64)

    state = side.restore()
    if state is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        step = int(state["step"])
        acc = np.asarray(state["acc"], dtype=np.float64)

    model = side.prepare_model(model)
    x_all, y_all = dataset(cfg)
    x_all, y_all = torch.from_numpy(x_all), torch.from_numpy(y_all)

    def save_and_report(step: int, loss: float, reason: str = "cadence") -> None:
        metrics = {"step": step, "loss": loss, "reason": reason, **dict(zip(ACC_FIELDS, acc.tolist()))}
        if rank == 0:
            with tempfile.TemporaryDirectory() as tmp:
                raw = model.module if hasattr(model, "module") else model
                # CUDA tensors are saved as CPU tensors: any rank's device (or a CPU machine) reads them
                torch.save({"model": to_cpu(raw.state_dict()), "optimizer": to_cpu(optimizer.state_dict()),
                            "step": step, "acc": acc.tolist(), "config": cfg.to_dict()},
                           os.path.join(tmp, "state.pt"))
                side.checkpoint_written(step, tmp)
                side.report(metrics, tmp)
        else:
            side.report(metrics, None)

    def batches():
        """(lineage step index, epoch, local row ids) from the restored position on."""
        if cfg.data == "ray_data":
            shard = side.dataset_shard("train")
            s = step
            epoch = s // cfg.steps_per_epoch
            local_batch = max(1, cfg.batch_size // ws)
            while s < cfg.steps:
                yielded = False
                for b in shard.iter_batches(batch_size=local_batch, drop_last=True, batch_format="numpy"):
                    if s >= cfg.steps:
                        return
                    yield s, epoch, np.asarray(b["id"], dtype=np.int64)
                    s += 1
                    yielded = True
                epoch += 1
                if not yielded:
                    return
        else:
            for s in range(step, cfg.steps):
                yield s, s // cfg.steps_per_epoch, rank_slice(global_batch(cfg, s), rank, ws)

    def deadline_passed() -> bool:
        """Whether the run's deadline has passed, as every rank agrees: a rank
        alone cannot stop (the others would wait in the next all-reduce)."""
        import time

        flag = torch.tensor([1.0 if time.time() >= cfg.stop_at else 0.0], device=device)
        if dist.is_available() and dist.is_initialized():
            dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        return bool(flag.item())

    loss_value = float("nan")
    jit_done = False
    for s, epoch, ids in batches():
        side.step_begin(s + 1)
        idx = torch.from_numpy(ids)
        x, y = x_all[idx].to(device), y_all[idx].to(device)
        # Scale so DDP's gradient mean equals the full global-batch gradient.
        loss = ((model(x) - y) ** 2).sum() * ws / cfg.batch_size
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        inc = torch.from_numpy(accumulate(ids, epoch, cfg.rows)).to(device)
        if dist.is_available() and dist.is_initialized():
            dist.all_reduce(inc)
        acc = acc + inc.cpu().numpy()
        loss_value = float(loss.detach().cpu())
        step = s + 1
        side.step_done(step, rows=ids.tolist(), epoch=epoch, loss=loss_value)
        if cfg.step_delay_s:
            import time
            time.sleep(cfg.step_delay_s)
        if cfg.stop_at is not None and deadline_passed():
            save_and_report(step, loss_value, reason="deadline")
            break
        if step % cfg.checkpoint_every == 0 or step == cfg.steps:
            save_and_report(step, loss_value)
        elif cfg.jit_checkpoint and not jit_done:
            # get_preemption_info is a rank-0 broadcast: every rank calls it every step.
            info = side.preemption_info()
            if info is not None:
                side.preemption_notice(step, info.deadline_ms)
                save_and_report(step, loss_value, reason="preemption")
                jit_done = True

    raw = model.module if hasattr(model, "module") else model
    checksum = float(sum(p.detach().double().sum().item() for p in raw.parameters()))
    return {"step": step, "acc": acc.tolist(), "param_checksum": checksum}
