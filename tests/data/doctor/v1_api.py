"""V1 (Ray AIR) APIs that Ray Train V2 no longer has."""
import ray
import ray.train
from ray.air import session  # expect: v1-api
from ray.air.config import ScalingConfig  # expect: v1-api
from ray.air import RunConfig as AirRunConfig  # expect: v1-api
from ray.train import Checkpoint, FailureConfig, RunConfig, CheckpointConfig
from ray.train.lightning import LightningTrainer  # expect: v1-api
from ray.train.huggingface import TransformersTrainer, AccelerateTrainer  # expect: v1-api
from ray.train.torch import TorchTrainer


def train_func(config):
    ckpt = session.get_checkpoint()  # expect: v1-api
    if ckpt:
        state = ckpt.to_dict()
    restored = ray.train.get_checkpoint()
    if restored:
        state = restored.to_dict()  # expect: v1-api
    ctx = ray.train.get_context()
    print(ctx.get_trial_name(), ray.train.get_context().get_trial_id())  # expect: v1-api
    print(ctx.get_world_rank(), ctx.get_experiment_name(), state)
    session.report({"loss": 0.1}, checkpoint=Checkpoint.from_dict({"w": 1}))  # expect: v1-api
    ray.air.session.report({"loss": 0.1})  # expect: v1-api


old = ray.train.Trainer(backend="torch", num_workers=2)  # expect: v1-api
scaling = ScalingConfig(num_workers=2)
LightningTrainer(scaling_config=scaling)
TorchTrainer(
    train_func,
    scaling_config=scaling,
    run_config=RunConfig(name="v1", storage_path="s3://b/v1", failure_config=FailureConfig(max_failures=1),
                         verbose=2),  # expect: v1-api
    resume_from_checkpoint=Checkpoint("s3://b/old"),  # expect: v1-api
)
CheckpointConfig(num_to_keep=2, checkpoint_frequency=5)  # expect: v1-api
AirRunConfig(name="air")
