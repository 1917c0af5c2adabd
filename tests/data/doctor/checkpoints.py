"""Checkpoints written but never reported; restores from fixed paths or none at all."""
import os
import tempfile

import torch
import ray.train as rt
from ray.train import Checkpoint


def saves_but_never_reports(config):
    model = torch.nn.Linear(2, 2)
    for step in range(3):
        rt.report({"step": step})
        torch.save(model.state_dict(), f"/tmp/ckpt/model-{step}.pt")  # expect: checkpoint-not-reported
        model.save_pretrained("/tmp/ckpt/hf")


def hf_save(config, trainer):
    rank = rt.get_context().get_world_rank()
    trainer.save_model("/tmp/out")  # expect: checkpoint-not-reported
    print(rank)


def restores_fixed_path(config):  # no get_checkpoint: the fixed-path finding covers it, not no-restore
    model = torch.nn.Linear(2, 2)
    if os.path.exists("/tmp/ckpt/model.pt"):
        model.load_state_dict(torch.load("/tmp/ckpt/model.pt"))  # expect: fixed-restore-path
    for step in range(3):
        with tempfile.TemporaryDirectory() as d:
            torch.save(model.state_dict(), os.path.join(d, "model.pt"))
            rt.report({"step": step}, checkpoint=Checkpoint.from_directory(d))


def loads_beside_the_checkpoint(config):
    model = torch.nn.Linear(2, 2)
    model.load_state_dict(torch.load(config["pretrained"]))  # weights to start from: not a restore
    ckpt = rt.get_checkpoint()
    if ckpt:
        model.load_state_dict(torch.load("/tmp/ckpt/model.pt"))  # expect: fixed-restore-path
        with ckpt.as_directory() as d:
            model.load_state_dict(torch.load(os.path.join(d, "model.pt")))
            torch.load("/shared/latest.pt")  # expect: fixed-restore-path
    with tempfile.TemporaryDirectory() as d:
        torch.save(model.state_dict(), os.path.join(d, "model.pt"))
        rt.report({}, checkpoint=Checkpoint.from_directory(d))


def never_restores(config):  # expect: no-restore
    model = torch.nn.Linear(2, 2)
    model.load_state_dict(torch.load(config["pretrained"]))
    with tempfile.TemporaryDirectory() as d:
        torch.save(model.state_dict(), os.path.join(d, "model.pt"))
        rt.report({"loss": 0.0}, Checkpoint.from_directory(d))


def restore(model):
    ckpt = rt.get_checkpoint()
    if ckpt:
        with ckpt.as_directory() as d:
            model.load_state_dict(torch.load(os.path.join(d, "model.pt")))


def restores_through_a_helper(config):
    model = torch.nn.Linear(2, 2)
    restore(model)
    with tempfile.TemporaryDirectory() as d:
        torch.save(model.state_dict(), os.path.join(d, "model.pt"))
        rt.report({"loss": 0.0}, checkpoint=Checkpoint.from_directory(d))


def export(model):  # a plain helper, not a train function
    torch.save(model, "model.pt")


def metrics_only(config):
    model = torch.nn.Linear(2, 2)
    model.load_state_dict(torch.load("/data/pretrained.pt"))  # input, not a restore: it never checkpoints
    rt.report({"loss": 0.0})


def restores_and_reports_through_a_closure(config):
    model = torch.nn.Linear(2, 2)
    ckpt = rt.get_checkpoint()
    if ckpt:
        with ckpt.as_directory() as d:
            model.load_state_dict(torch.load(os.path.join(d, "model.pt")))

    def save_and_report(step):  # nested: the enclosing function restores
        with tempfile.TemporaryDirectory() as d:
            torch.save(model.state_dict(), os.path.join(d, "model.pt"))
            rt.report({"step": step}, checkpoint=Checkpoint.from_directory(d))

    for step in range(3):
        save_and_report(step)


def lightning_style(config, trainer, pl_module):
    from ray.train.lightning import RayTrainReportCallback

    trainer.callbacks.append(RayTrainReportCallback())
    trainer.save_checkpoint("/tmp/lit.ckpt")  # the callback reports what Lightning saves
    if rt.get_checkpoint():
        pass
