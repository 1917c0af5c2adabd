"""Issue 22, seen 8: a checkpoint saved every step but never handed to Ray (report without
checkpoint=), so a restart begins at step 0: an error. The near misses beside it hand the
files to Ray, or serialise into memory, and must stay silent."""
import io
import os
import tempfile

import torch
import ray.train
from ray.train import Checkpoint


def saves_to_a_fixed_path_and_reports_metrics_only(config):
    model = torch.nn.Linear(4, 1)
    for step in range(config["steps"]):
        torch.save(model.state_dict(), os.path.join("/tmp", "model.pt"))  # expect: checkpoint-not-reported
        ray.train.report({"loss": 0.0, "step": step + 1})


def near_miss_saves_then_reports_the_directory(config):
    model = torch.nn.Linear(4, 1)
    for step in range(config["steps"]):
        with tempfile.TemporaryDirectory() as d:
            torch.save(model.state_dict(), os.path.join(d, "model.pt"))
            ckpt = Checkpoint.from_directory(d) if ray.train.get_context().get_world_rank() == 0 else None
            ray.train.report({"loss": 0.0, "step": step + 1}, checkpoint=ckpt)
    if ray.train.get_checkpoint():
        pass


def near_miss_serialises_into_memory(config):
    model = torch.nn.Linear(4, 1)
    buf = io.BytesIO()
    torch.save(model.state_dict(), buf)  # bytes to hash or send: not a checkpoint file
    with io.BytesIO() as other:
        torch.save(model, other)
    ray.train.report({"size": len(buf.getvalue())})
