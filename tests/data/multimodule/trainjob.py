"""The entry module of a job of several modules: what a user's training repository looks like."""

import os
import tempfile
import time

import torch

from mm_helpers import resume_step, step_delay
from mmpkg import build_model


def train_func(config):
    import ray.train

    from mmpkg.sub.loss import loss_fn   # imported on the worker only: the package ships whole

    model = build_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    start = resume_step(ray.train.get_checkpoint())
    for step in range(start, config.get("steps", 6)):
        loss = loss_fn(model(torch.ones(8, 4)))
        opt.zero_grad()
        loss.backward()
        opt.step()
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "step"), "w") as f:
                f.write(str(step + 1))
            ray.train.report({"loss": float(loss), "step": step + 1},
                             checkpoint=ray.train.Checkpoint.from_directory(d))
        time.sleep(step_delay(config))
