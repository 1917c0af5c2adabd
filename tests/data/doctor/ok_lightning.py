"""Correct: PyTorch Lightning inside a V2 TorchTrainer."""
import lightning.pytorch as pl
import ray.train
from ray.train import FailureConfig, RunConfig, ScalingConfig
from ray.train.lightning import (RayDDPStrategy, RayLightningEnvironment, RayTrainReportCallback,
                                 prepare_trainer)
from ray.train.torch import TorchTrainer

from mymodels import LitModel, make_loader


def train_func():
    model = LitModel()
    trainer = pl.Trainer(
        max_epochs=5,
        devices="auto",
        accelerator="auto",
        strategy=RayDDPStrategy(),
        plugins=[RayLightningEnvironment()],
        callbacks=[RayTrainReportCallback()],
        enable_checkpointing=False,
    )
    trainer = prepare_trainer(trainer)
    checkpoint = ray.train.get_checkpoint()
    if checkpoint:
        with checkpoint.as_directory() as ckpt_dir:
            trainer.fit(model, train_dataloaders=make_loader(),
                        ckpt_path=f"{ckpt_dir}/{RayTrainReportCallback.CHECKPOINT_NAME}")
    else:
        trainer.fit(model, train_dataloaders=make_loader())


trainer = TorchTrainer(
    train_func,
    scaling_config=ScalingConfig(num_workers=4, use_gpu=True),
    run_config=RunConfig(name="lit", storage_path="gs://bucket/lit",
                         failure_config=FailureConfig(max_failures=-1)),
)
result = trainer.fit()
