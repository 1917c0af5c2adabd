"""An elastic TorchTrainer job (`ScalingConfig(num_workers=(1, 3))`), as the Ray
Train V2 guide writes it: the train function never assumes a world size. Each
step every worker takes its slice of one global batch (rank::world_size), so a
group restarted smaller after a node is lost trains on the same data; rank 0
reports a checkpoint every `checkpoint_every` steps (the other ranks report
without one) and a restart resumes at the step after the restored one, from
`ray.train.get_checkpoint()`. One step is one report."""

import os
import tempfile
import time

import torch

GLOBAL_BATCH = 12     # divisible by 1, 2 and 3 workers


def train_func(config):
    import ray.train
    import ray.train.torch

    ctx = ray.train.get_context()
    rank, world = ctx.get_world_rank(), ctx.get_world_size()
    model = ray.train.torch.prepare_model(torch.nn.Linear(1, 1))
    raw = model.module if hasattr(model, "module") else model
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    start = 0
    checkpoint = ray.train.get_checkpoint()
    if checkpoint is not None:
        with checkpoint.as_directory() as d:
            state = torch.load(os.path.join(d, "state.pt"))
        raw.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        start = state["step"]
    every = config.get("checkpoint_every", 2)
    for step in range(start + 1, config.get("steps", 12) + 1):
        x = torch.arange(GLOBAL_BATCH, dtype=torch.float32)[rank::world, None] / GLOBAL_BATCH
        loss = ((model(x) - 2 * x) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        time.sleep(config.get("step_delay_s", 0.0))
        metrics = {"step": step, "loss": float(loss), "world_size": world}
        if rank == 0 and step % every == 0:
            with tempfile.TemporaryDirectory() as d:
                torch.save({"model": raw.state_dict(), "opt": opt.state_dict(), "step": step},
                           os.path.join(d, "state.pt"))
                ray.train.report(metrics, checkpoint=ray.train.Checkpoint.from_directory(d))
        else:
            ray.train.report(metrics, checkpoint=None)
