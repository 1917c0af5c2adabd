"""Correct: a TorchTrainer driver that survives worker and driver failures."""
import os
import tempfile

import torch
import torch.distributed as dist
import ray.train as rt
from ray.train import Checkpoint, FailureConfig, RunConfig, ScalingConfig
from ray.train.torch import TorchTrainer, prepare_model


def train_func(config):
    model = prepare_model(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    start = 0
    checkpoint = rt.get_checkpoint()
    if checkpoint:
        with checkpoint.as_directory() as d:
            state = torch.load(os.path.join(d, "state.pt"))
            model.load_state_dict(state["model"])
            start = state["step"] + 1
    rank = rt.get_context().get_world_rank()
    for step in range(start, config["steps"]):
        loss = model(torch.randn(8, 4)).sum()
        loss.backward()
        opt.step()
        dist.barrier()
        with tempfile.TemporaryDirectory() as tmp:
            ckpt = None
            if rank == 0:
                torch.save({"model": model.state_dict(), "step": step}, os.path.join(tmp, "state.pt"))
                ckpt = Checkpoint.from_directory(tmp)
            rt.report({"loss": loss.item(), "step": step}, checkpoint=ckpt)
        if rank == 0:
            print("step", step)  # rank-0-only work that is not a collective
        rt.report({"step": step}, checkpoint=None if rank else ckpt)


def main():
    trainer = TorchTrainer(
        train_func,
        train_loop_config={"steps": 10},
        scaling_config=ScalingConfig(num_workers=2),
        run_config=RunConfig(
            name="ok-torch",
            storage_path="s3://my-bucket/ray",
            failure_config=FailureConfig(max_failures=3),
        ),
    )
    return trainer.fit()


if __name__ == "__main__":
    main()
