"""A DDP job that checkpoints the way Ray Train's guide recommends for data
parallel training: the model is replicated, so only rank 0 saves it and reports
a checkpoint; every other rank reports its metrics with `checkpoint=None` at the
same steps. A restart loads the checkpoint on every rank from
`ray.train.get_checkpoint()` and resumes at the step after it. One step is one
report. `examples/rank0-checkpoint-kill-worker.yaml` runs it under a fault."""

import os
import tempfile
import time

import torch


def batch(step: int, rank: int, world: int, rows: int = 16, features: int = 4):
    """This rank's slice of the global batch of `step` (a redone step sees the same data)."""
    g = torch.Generator().manual_seed(step)
    x = torch.randn(rows * world, features, generator=g)[rank::world]
    return x, 3 * x.sum(dim=1, keepdim=True)


def train_func(config):
    import ray.train
    import ray.train.torch

    ctx = ray.train.get_context()
    rank, world = ctx.get_world_rank(), ctx.get_world_size()
    torch.manual_seed(0)
    model = ray.train.torch.prepare_model(torch.nn.Linear(4, 1))     # DistributedDataParallel
    raw = model.module if hasattr(model, "module") else model
    opt = torch.optim.SGD(model.parameters(), lr=0.05)

    start = 0
    checkpoint = ray.train.get_checkpoint()
    if checkpoint is not None:
        with checkpoint.as_directory() as d:
            state = torch.load(os.path.join(d, "model.pt"))
        raw.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        start = state["step"]

    every = config.get("checkpoint_every", 1)
    for step in range(start + 1, config.get("steps", 12) + 1):
        x, y = batch(step, rank, world)
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        time.sleep(config.get("step_delay_s", 0.0))
        metrics = {"step": step, "loss": float(loss.detach())}
        if rank == 0 and step % every == 0:
            with tempfile.TemporaryDirectory() as d:
                torch.save({"model": raw.state_dict(), "opt": opt.state_dict(), "step": step},
                           os.path.join(d, "model.pt"))
                ray.train.report(metrics, checkpoint=ray.train.Checkpoint.from_directory(d))
        else:
            ray.train.report(metrics, checkpoint=None)      # the other ranks: metrics only
