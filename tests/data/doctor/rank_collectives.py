"""Collectives (report, barrier, all_reduce) reached by some ranks only."""
import torch
import torch.distributed as dist
from ray import train
from ray.train import Checkpoint
from ray.train import report as r


def guarded_report(config):
    ctx = train.get_context()
    rank = ctx.get_world_rank()
    is_main = rank == 0
    for step in range(10):
        if rank == 0:
            r({"step": step}, checkpoint=Checkpoint.from_directory("/tmp/c"))  # expect: report-some-ranks
        if is_main:
            dist.barrier()  # expect: report-some-ranks
        if train.get_context().get_local_rank() == 0:
            pass
        else:
            dist.all_reduce(torch.ones(1))  # expect: report-some-ranks
        if dist.get_rank() != 0:
            continue
        train.report({"step": step})  # expect: report-some-ranks
    c = train.get_checkpoint()
    print(c)


def both_branches(config):
    rank = train.get_context().get_world_rank()
    model = torch.nn.Linear(2, rank + 1)
    loss = model(torch.ones(2)).sum()
    if rank == 0:
        train.report({"loss": 1.0}, checkpoint=Checkpoint.from_directory("/tmp/c"))
    else:
        train.report({"loss": 1.0}, checkpoint=None)
    if loss > 0.5:  # depends on the data, not the rank: not this rule
        dist.barrier()
    r({"x": 1}) if rank == 0 else None  # expect: report-some-ranks
    train.report({"x": 1}, checkpoint=Checkpoint.from_directory("/tmp/c") if rank == 0 else None)
    if config.get("world_size", 1) > 1:
        dist.barrier()
    if train.get_checkpoint():
        pass
