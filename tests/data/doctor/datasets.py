"""get_dataset_shard in a train function whose trainer gets no datasets=."""
import ray
import ray.train
from ray.train import FailureConfig, RunConfig
from ray.train.torch import TorchTrainer

RC = RunConfig(name="ds", storage_path="s3://b/ds", failure_config=FailureConfig(max_failures=1))


def read_shard(config):
    for batch in ray.train.get_dataset_shard("train").iter_batches(batch_size=8):
        ray.train.report({"rows": len(batch)})


def no_data(config):
    ray.train.report({"rows": 0})


TorchTrainer(read_shard, run_config=RC)  # expect: dataset-shard-without-datasets
TorchTrainer(train_loop_per_worker=read_shard, run_config=RC, datasets=None)  # expect: dataset-shard-without-datasets
TorchTrainer(read_shard, run_config=RC, datasets={"train": ray.data.range(100)})
TorchTrainer(no_data, run_config=RC)


def maybe_ray_data(config):
    if config.get("data") == "ray_data":  # depends on the config: cannot be told statically
        shard = ray.train.get_dataset_shard("train")
        print(shard)
    ray.train.report({})


TorchTrainer(maybe_ray_data, run_config=RC)
