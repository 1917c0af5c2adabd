"""A driver written for Ray 2.60: fine there, broken on older releases (doctor --ray)."""
import os

import ray.train
from ray.train import FailureConfig, RunConfig, ScalingConfig
from ray.train.torch import TorchTrainer

os.environ["RAY_TRAIN_COLLECTIVE_TIMEOUT_S"] = "-1"


def train_fn(config):
    if ray.train.get_preemption_info() is not None:
        pass
    ray.train.report({"loss": 1.0})


trainer = TorchTrainer(
    train_fn,
    scaling_config=ScalingConfig(num_workers=(2, 4)),
    run_config=RunConfig(
        storage_path="s3://bucket/runs",
        failure_config=FailureConfig(max_failures=2, max_preemption_failures=3, preemption_grace_s=5.0),
    ),
)
