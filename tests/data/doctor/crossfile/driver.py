"""The driver of train_mod: it forgets datasets=."""
from ray.train import FailureConfig, RunConfig
from ray.train.torch import TorchTrainer

from train_mod import train_func

run_config = RunConfig(name="cross", storage_path="gs://b/x", failure_config=FailureConfig(max_failures=2))
TorchTrainer(train_func, run_config=run_config)  # expect: dataset-shard-without-datasets
