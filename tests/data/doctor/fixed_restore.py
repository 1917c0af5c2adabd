"""Issue 22, seen 8: a restore from a fixed path instead of ray.train.get_checkpoint(): after
a restart on another node the file is missing, on the same one it may be newer than any
registered checkpoint. An error. The near misses load input weights (unconditionally, from a
path the job never writes) or restore through get_checkpoint, and must not be called restores."""
import os
import tempfile

import torch
import ray.train
from ray.train import Checkpoint

CKPT = "/mnt/local/ckpt/model.pt"


def restores_from_the_path_it_saves_to(config):
    model = torch.nn.Linear(4, 1)
    try:
        model.load_state_dict(torch.load(CKPT))  # expect: fixed-restore-path
    except FileNotFoundError:
        pass
    for step in range(config["steps"]):
        torch.save(model.state_dict(), CKPT)
        with tempfile.TemporaryDirectory() as d:
            torch.save(model.state_dict(), os.path.join(d, "model.pt"))
            ray.train.report({"step": step + 1}, checkpoint=Checkpoint.from_directory(d))


def near_miss_pretrained_then_get_checkpoint(config):
    model = torch.nn.Linear(4, 1)
    model.load_state_dict(torch.load("/mnt/models/pretrained.pt"))  # where training starts: input
    ckpt = ray.train.get_checkpoint()
    if ckpt:
        with ckpt.as_directory() as d:
            model.load_state_dict(torch.load(os.path.join(d, "model.pt")))
    for step in range(config["steps"]):
        with tempfile.TemporaryDirectory() as d:
            torch.save(model.state_dict(), os.path.join(d, "model.pt"))
            ray.train.report({"step": step + 1}, checkpoint=Checkpoint.from_directory(d))


def near_miss_pretrained_only(config):  # expect: no-restore
    model = torch.nn.Linear(4, 1)
    model.load_state_dict(torch.load("/mnt/models/pretrained.pt"))  # input it never writes: no restore at all
    with tempfile.TemporaryDirectory() as d:
        torch.save(model.state_dict(), os.path.join(d, "model.pt"))
        ray.train.report({"step": 1}, checkpoint=Checkpoint.from_directory(d))
