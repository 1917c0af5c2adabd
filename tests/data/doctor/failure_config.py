"""max_failures left at 0, or no FailureConfig at all."""
from ray import train
from ray.train import FailureConfig, RunConfig, ScalingConfig
from ray.train.torch import TorchTrainer


def train_func():
    train.report({"loss": 1.0})


retry = FailureConfig(max_failures=3)
FailureConfig(max_preemption_failures=2)  # expect: max-failures-default
FailureConfig(max_failures=0)  # expect: max-failures-default
FailureConfig(0)  # expect: max-failures-default
FailureConfig(max_failures=-1)
FailureConfig(**{"max_failures": 3})
RunConfig(name="a", storage_path="s3://b/a")  # expect: no-failure-config
RunConfig(name="a", storage_path="s3://b/a", failure_config=None)  # expect: no-failure-config
RunConfig(name="a", storage_path="s3://b/a", failure_config=retry)
RunConfig(**{"name": "a"})

TorchTrainer(train_func, scaling_config=ScalingConfig(num_workers=2))  # expect: no-failure-config, local-storage, unstable-name
TorchTrainer(train_func, run_config=None)  # expect: no-failure-config, local-storage, unstable-name
TorchTrainer(train_func, run_config=RunConfig(name="ok", storage_path="hdfs://nn/x", failure_config=retry))
