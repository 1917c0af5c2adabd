"""A job with the classic mistake: it saves its model to a fixed local path and
never hands a checkpoint to `ray.train.report`, so a restart begins at step 0.
Killed once, it must fail `bounded_lost_work` ("no checkpoint was ever
reported"); `ftharness doctor` flags it statically too."""

import os
import time

import torch


def train_func(config):
    import ray.train

    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(config.get("steps", 12)):
        loss = model(torch.ones(8, 4)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch.save(model.state_dict(), os.path.join("/tmp", "ftharness-unreported-model.pt"))
        ray.train.report({"loss": float(loss), "step": step + 1})
        time.sleep(config.get("step_delay_s", 0.3))
