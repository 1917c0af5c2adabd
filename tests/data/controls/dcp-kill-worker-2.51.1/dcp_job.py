"""A sharded-checkpoint job as Ray Train's FSDP2 guide writes it: the model is
sharded across the workers with `fully_shard` (FSDP2; gloo on CPU), and every
`checkpoint_every` steps each rank writes *its own shard* of one checkpoint with
`torch.distributed.checkpoint` (DCP: rank r writes `__r_0.distcp`, rank 0 also the
`.metadata`) into a local folder and reports it. Ray Train gathers the files of
every rank into one checkpoint folder; a restart loads the whole checkpoint back
with `dcp.load` from `ray.train.get_checkpoint()`, each rank reading its shard.
Between checkpoints every rank reports metrics only. One step is one report.
`examples/dcp-kill-worker.yaml` runs it under a fault."""

import tempfile
import time

import torch


def batch(step: int, rank: int, world: int, rows: int = 16, features: int = 8):
    """This rank's slice of the global batch of `step` (deterministic: a redone step sees the same data)."""
    g = torch.Generator().manual_seed(step)
    x = torch.randn(rows * world, features, generator=g)[rank::world]
    return x, x.sum(dim=1, keepdim=True)


def train_func(config):
    import ray.train
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
    from torch.distributed.fsdp import fully_shard

    ctx = ray.train.get_context()
    rank, world = ctx.get_world_rank(), ctx.get_world_size()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    for layer in model:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer)
    fully_shard(model)            # every parameter is a DTensor: each rank holds its shard
    opt = torch.optim.Adam(model.parameters(), lr=0.01)

    start = 0
    checkpoint = ray.train.get_checkpoint()
    if checkpoint is not None:
        with checkpoint.as_directory() as d:
            model_sd, opt_sd = get_state_dict(model, opt)
            state = {"model": model_sd, "optim": opt_sd, "extra": {"step": torch.tensor(0)}}
            dcp.load(state, checkpoint_id=d)      # each rank reads its own shard (and .metadata)
            set_state_dict(model, opt, model_state_dict=state["model"], optim_state_dict=state["optim"])
            start = int(state["extra"]["step"])

    every = config.get("checkpoint_every", 2)
    for step in range(start + 1, config.get("steps", 12) + 1):
        x, y = batch(step, rank, world)
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        time.sleep(config.get("step_delay_s", 0.0))
        metrics = {"step": step, "loss": float(loss.detach())}
        if step % every == 0:
            with tempfile.TemporaryDirectory() as d:
                model_sd, opt_sd = get_state_dict(model, opt)
                dcp.save({"model": model_sd, "optim": opt_sd, "extra": {"step": torch.tensor(step)}},
                         checkpoint_id=d)          # this rank's shard: __<rank>_0.distcp
                ray.train.report(metrics, checkpoint=ray.train.Checkpoint.from_directory(d))
        else:
            ray.train.report(metrics, checkpoint=None)
